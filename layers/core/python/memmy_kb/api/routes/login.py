"""The login configuration: public, so a desktop that knows only the cloud's URL can start logging in.

The one route without the JWT authorizer (``Auth: {Authorizer: NONE}`` in template.yaml): it reads no
caller, no store and no user data, only the deployment's public login settings (SECURITY.md).
"""

from __future__ import annotations

from http import HTTPStatus

from aws_lambda_powertools.event_handler import Response

from memmy_kb.api.injected import SettingsDep
from memmy_kb.api.models.login import BEARER_TOKENS, LoginConfiguration
from memmy_kb.api.resolver import json_response, new_router, responses
from memmy_kb.errors import LoginNotConfigured

# Short and public: the settings change only with a deploy, and a stale copy only delays a new one.
CACHE_CONTROL = "public, max-age=300"

router = new_router()


@router.get(
    "/login-configuration",
    operation_id="getLoginConfiguration",
    summary="The OpenID Connect settings the desktop logs in with (no token needed)",
    responses=responses(
        HTTPStatus.OK,
        "Issuer, desktop client id, audience, scopes and which token to send",
        LoginConfiguration,
        (HTTPStatus.SERVICE_UNAVAILABLE, "The deployment lacks its login settings"),
        public=True,
    ),
)
def handle_get_login_configuration(settings: SettingsDep) -> Response[str]:
    if not (settings.login_issuer and settings.login_client_id and settings.login_audience and settings.login_scopes):
        raise LoginNotConfigured("This deployment has no login configuration.")
    bearer_token = next((token for token in BEARER_TOKENS if token == settings.login_bearer_token), None)
    if bearer_token is None:
        raise LoginNotConfigured("This deployment names no usable login token (access_token or id_token).")
    configuration = LoginConfiguration(
        issuer=settings.login_issuer,
        client_id=settings.login_client_id,
        audience=settings.login_audience,
        scopes=list(settings.login_scopes),
        bearer_token=bearer_token,
    )
    response = json_response(HTTPStatus.OK, configuration)
    response.headers["Cache-Control"] = CACHE_CONTROL
    return response
