"""``GET /login-configuration`` through the real manage_kb handler, its environment from template.yaml."""

from __future__ import annotations

from http import HTTPStatus

from memmy_local.template import load_template, parameter_defaults


def test_the_login_configuration_comes_from_the_template_parameters_without_a_token(service) -> None:
    # The moto stack is provisioned with JwtIssuer "memmy-test" and JwtAudience "memmy-kb"; the desktop
    # client id and the scopes are the template's defaults.
    defaults = parameter_defaults(load_template())

    reply = service.call("GET", "/login-configuration", None)

    assert reply.status == HTTPStatus.OK, reply.body
    assert reply.body == {
        "issuer": "memmy-test",
        "client_id": defaults["DesktopClientId"],
        "audience": "memmy-kb",
        "scopes": defaults["LoginScopes"].split(),
        # Another issuer than the stack's Cognito pool: the LoginBearerToken parameter's default.
        "bearer_token": defaults["LoginBearerToken"],
    }
    assert reply.body["bearer_token"] == "access_token"
    assert reply.body["scopes"][0] == "openid"
    assert reply.headers["Cache-Control"] == "public, max-age=300"


def test_every_other_manage_kb_route_still_needs_the_caller(service) -> None:
    assert service.call("GET", "/knowledge-bases", None).status == HTTPStatus.UNAUTHORIZED
    assert service.call("GET", "/me", None).status == HTTPStatus.UNAUTHORIZED
