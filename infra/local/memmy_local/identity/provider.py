"""The dev identity provider: an OpenID Connect server on 127.0.0.1 for the desktop (``memmy-desktop``)
and an OAuth authorization server for MCP clients (registered, or named by a metadata document; their
tokens are for the MCP resource, after a consent page), Authlib on Flask, served by werkzeug in a daemon
thread; whoever signs in is whatever they type (docs/architecture.md, "Local stack"; docs/login.md, "MCP
clients"). Its request log names method, path and status only (query strings carry codes), and
Authlib's DEBUG lines, which print tokens, are turned off."""

from __future__ import annotations

import hmac
import logging
import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import jwt
from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2 import OAuth2Error
from cryptography.hazmat.primitives import serialization
from flask import Flask, Response, jsonify, request
from joserfc.jwk import RSAKey
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from memmy_kb.api.mcp_auth.clients import McpClient
from memmy_kb.domain.mcp_auth.clients import origin
from memmy_kb.domain.remote_mcp.tokens import mcp_access_claims
from memmy_local.serving import serve_in_background, stop_serving
from memmy_local.tokens import (
    ALGORITHM,
    DEFAULT_AUDIENCE,
    MCP_SCOPE,
    MCP_TTL_SECONDS,
    SigningKey,
    key_id,
)

from . import pages
from .device_pages import DevicePages
from .directory import ClientDirectory
from .discovery import authorization_server_metadata, openid_configuration
from .grants import (
    AccessTokenValidator,
    CodeGrant,
    CodeIdToken,
    DeviceEndpoint,
    DeviceGrant,
    IdToken,
    RefreshGrant,
    Revocation,
    S256Required,
    UserInfoRoute,
)
from .records import SCOPES, Identity, PublicClient
from .registration import MAX_REGISTRATION_BYTES, Registration
from .resources import Issuer
from .state import IdentityState
from .web import html as _html
from .web import json_error as _json_error
from .web import response as _response

log = logging.getLogger("memmy_local.identity_provider")

DEFAULT_PORT = 8070
DEFAULT_ACCESS_TOKEN_TTL = 3600
REFRESH_TOKENS_FILE = "identity-refresh-tokens.json"
_QUERY = re.compile(r"\?[^\s\"]*")


class _QuietRequests(WSGIRequestHandler):
    """werkzeug's request log without query strings (they carry codes, states and user codes)."""

    def log(self, type: str, message: str, *args: Any) -> None:
        try:
            text = message % args if args else message
        except (TypeError, ValueError):
            text = message
        log.log(logging.WARNING if type == "error" else logging.INFO, "%s", _QUERY.sub("?…", text))


# -- the provider ---------------------------------------------------------------------------------------


class IdentityProvider(DevicePages):
    """The dev OpenID provider on ``host:port`` (0 = any free port); ``start()``, ``stop()``, ``url``."""

    def __init__(
        self,
        key: SigningKey,
        *,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        issuer: str | None = None,
        audience: str = DEFAULT_AUDIENCE,
        access_token_ttl: int = DEFAULT_ACCESS_TOKEN_TTL,
        state_dir: Path | None = None,
        clock: Callable[[], float] | None = None,
        mcp_resource: str | None = None,
        metadata_http: httpx.Client | None = None,
    ) -> None:
        self.key = key
        self.kid = key_id(key)
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        self.jwk = RSAKey.import_key(pem, {"kid": self.kid, "use": "sig", "alg": ALGORITHM})
        self.audience = audience
        self.ttl = access_token_ttl
        path = state_dir / REFRESH_TOKENS_FILE if state_dir is not None else None
        self.state = IdentityState(path=path, **({"clock": clock} if clock else {}))
        self.mcp_resource = mcp_resource  # the MCP endpoint, http://127.0.0.1:<api port>/mcp, once known
        self._metadata_http = metadata_http
        self.clients = ClientDirectory(self.state, self._metadata_client)
        self._form_secret = secrets.token_bytes(32)
        # The consent form's tokens are under another secret: no sign-in form passes for a consent.
        self._consent_secret = hmac.new(self._form_secret, b"consent", "sha256").digest()
        try:
            self._httpd: BaseWSGIServer = make_server(
                host, port, self._build_app(), threaded=True, request_handler=_QuietRequests
            )
        except SystemExit as err:  # werkzeug exits the process when it cannot bind
            raise OSError(f"the identity provider cannot listen on {host}:{port}") from err
        self.url = f"http://{host}:{self._httpd.server_port}"
        self.issuer = issuer or self.url
        self._thread: threading.Thread | None = None

    def start(self) -> IdentityProvider:
        authlib_log = logging.getLogger("authlib")
        if authlib_log.level < logging.INFO:
            authlib_log.setLevel(logging.INFO)  # its DEBUG lines print whole token responses, even at DEBUG
        self._thread = serve_in_background(self._httpd, "memmy-idp")
        return self

    def stop(self) -> None:
        stop_serving(self._httpd, self._thread)
        self._thread = None
        if self._metadata_http is not None:
            self._metadata_http.close()

    def _metadata_client(self) -> httpx.Client:
        if self._metadata_http is None:
            self._metadata_http = httpx.Client()
        return self._metadata_http

    def __enter__(self) -> IdentityProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- tokens ---------------------------------------------------------------------------------

    def _generate_token(
        self,
        grant_type: str,
        client: PublicClient,
        user: Identity | None = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        assert user is not None
        return self.token_response(client, user, scope, None, include_refresh_token)

    def token_response(
        self,
        client: Any,
        user: Identity,
        scope: str | None,
        resource: str | None,
        include_refresh_token: bool,
    ) -> dict[str, Any]:
        """The desktop's tokens (``aud`` = the API's audience, the profile claims), or with ``resource`` an
        MCP client's (contract: ``aud`` = the resource, ``kb.search``, ``auth_time`` of the consent)."""
        scope, now, ttl = client.get_allowed_scope(scope), int(self.state.clock()), self.ttl
        if resource is None:
            claims = {"iss": self.issuer, "aud": self.audience, "iat": now, "exp": now + ttl}
            claims |= user.claims() | {"client_id": client.get_client_id(), "scope": scope}
        else:
            ttl = min(ttl, MCP_TTL_SECONDS)
            claims = mcp_access_claims(
                user.user_id, issuer=self.issuer, resource=resource, client_id=client.get_client_id(),
                auth_time=user.auth_time, now=now, ttl_seconds=ttl, client_name=client.client_name, scope=scope,
            )  # fmt: skip
        token: dict[str, Any] = {
            "access_token": jwt.encode(claims, self.key, algorithm=ALGORITHM, headers={"kid": self.kid}),
            "token_type": "Bearer",
            "expires_in": ttl,
            "scope": scope,
        }
        if include_refresh_token:
            token["refresh_token"] = secrets.token_urlsafe(32)
        return token

    def _save_token(self, token: dict[str, Any], oauth_request: Any) -> None:
        if "refresh_token" in token:
            previous = oauth_request.refresh_token  # the rotated-away record on a refresh
            grant = oauth_request.authorization_code or previous
            self.state.add_refresh(
                token["refresh_token"],
                client_id=oauth_request.client.get_client_id(),
                scope=token["scope"],
                identity=oauth_request.user,
                family=previous.family if previous is not None else None,
                resource=grant.resource if grant is not None else None,
            )

    def discovery(self) -> dict[str, Any]:
        return openid_configuration(self.url, self.issuer)

    # -- the web app ----------------------------------------------------------------------------

    def _build_app(self) -> Flask:
        app = Flask(__name__)
        app.config["OAUTH2_SCOPES_SUPPORTED"] = [*SCOPES, MCP_SCOPE]
        self._server = self._authorization_server(app)
        for rule, methods, view in (
            ("/.well-known/openid-configuration", ["GET"], self._openid_configuration),
            ("/.well-known/oauth-authorization-server", ["GET"], self._authorization_server_metadata),
            ("/register", ["POST"], self._register),
            ("/jwks.json", ["GET"], self._jwks),
            ("/authorize", ["GET", "POST"], self._authorize),
            ("/token", ["POST"], self._token),
            ("/device_authorization", ["POST"], self._device_authorization),
            ("/revoke", ["POST"], self._revoke),
            ("/userinfo", ["GET", "POST"], self._userinfo),
            ("/device", ["GET"], self._device_page),
            ("/device", ["POST"], self._device_posted),
        ):
            app.add_url_rule(rule, view.__name__.lstrip("_"), view, methods=methods)
        return app

    def _authorization_server(self, app: Flask) -> AuthorizationServer:
        """Authlib's server for the desktop and the MCP clients, with the grants and endpoints of ``grants``,
        registration and RFC 9207's ``iss``."""
        server = AuthorizationServer(app, query_client=self.clients.query, save_token=self._save_token)
        server.idp = self
        self._issuer_parameter = Issuer(lambda: self.issuer)
        server.register_extension(self._issuer_parameter)
        server.register_endpoint(Registration)
        server.register_token_generator("default", self._generate_token)
        server.register_grant(CodeGrant, [S256Required(required=True), CodeIdToken(self)])
        server.register_grant(RefreshGrant, [IdToken(self)])
        server.register_grant(DeviceGrant, [IdToken(self)])
        server.register_endpoint(DeviceEndpoint)
        server.register_endpoint(Revocation)
        protector = ResourceProtector()
        protector.register_token_validator(AccessTokenValidator(self))
        server.register_endpoint(UserInfoRoute(resource_protector=protector))
        return server

    def _refused(self, error: OAuth2Error) -> Response:
        # Back to the client (with iss) only at a redirect URI its client accepts; otherwise a page.
        if error.redirect_uri and self._client_accepts(error.redirect_uri):
            answer = _response(self._server.handle_error_response(None, error))
            self._issuer_parameter.add_issuer_parameter(self._server, answer)
            return answer
        text = f"{error.error}: {error.description or 'the request was refused'}"
        return _html(pages.message_page("Sign-in refused", text), 400)

    def _client_accepts(self, redirect_uri: str) -> bool:
        try:
            client = self.clients.query(request.values.get("client_id"))
        except OAuth2Error:
            return False
        return client is not None and bool(client.check_redirect_uri(redirect_uri))

    # -- the routes -----------------------------------------------------------------------------

    def _openid_configuration(self) -> Response:
        return jsonify(self.discovery())

    def _authorization_server_metadata(self) -> Response:
        return jsonify(authorization_server_metadata(self.url, self.issuer))

    def _register(self) -> Response:
        if (request.content_length or 0) > MAX_REGISTRATION_BYTES:
            text = f"The client metadata may have at most {MAX_REGISTRATION_BYTES // 1024} KB."
            return _json_error("invalid_client_metadata", text, 413)
        if not isinstance(request.get_json(silent=True), dict):
            text = "The body must be a JSON object of client metadata, sent as application/json."
            return _json_error("invalid_client_metadata", text, 400)
        return _response(self._server.create_endpoint_response("client_registration"))

    def _jwks(self) -> Response:
        return jsonify({"keys": [self.jwk.as_dict(private=False)]})

    def _authorize(self) -> Response:
        secret = self._form_secret
        form = list(request.form.items(multi=True))
        consenting = request.method == "POST" and pages.DECISION in request.form
        token_secret = self._consent_secret if consenting else secret
        if request.method == "POST" and not pages.form_is_ours(
            token_secret, form, request.form.get(pages.FORM_TOKEN)
        ):
            return _html(
                pages.message_page("Sign-in refused", "This form was not made here; start again."), 400
            )
        try:
            grant = self._server.get_consent_grant(end_user=None)
        except OAuth2Error as error:
            return self._refused(error)
        if request.method == "GET":
            return _html(
                pages.sign_in_page(
                    "/authorize", pages.original_params(request.args.items(multi=True)), secret
                )
            )
        if consenting:  # an MCP client's consent page answered: Allow gives a code, Deny access_denied
            allowed = request.form.get(pages.DECISION) == "allow"
            user = pages.consented_identity(request.form, int(self.state.clock())) if allowed else None
            return _response(self._server.create_authorization_response(grant_user=user, grant=grant))
        identity = self._signed_in("/authorize", form, secret)
        if isinstance(identity, Response):
            return identity
        if isinstance(grant.request.client, McpClient):
            return self._consent_page(grant, identity, form)
        return _response(self._server.create_authorization_response(grant_user=identity, grant=grant))

    def _consent_page(self, grant: Any, identity: Identity, form: list[tuple[str, str]]) -> Response:
        """After an MCP client's sign-in: what it asks for, with who signed in bound into the form."""
        client: McpClient = grant.request.client
        params = pages.original_params(form) + pages.consent_params(identity)
        page = pages.consent_page(
            "/authorize", params, self._consent_secret, user_id=identity.user_id,
            client_name=client.client_name, redirect_host=urlsplit(grant.redirect_uri).hostname or "",
        )  # fmt: skip
        return _html(page, headers=pages.headers_redirecting_to(origin(grant.redirect_uri)))

    def _token(self) -> Response:
        return _response(self._server.create_token_response())

    def _device_authorization(self) -> Response:
        return _response(self._server.create_endpoint_response("device_authorization"))

    def _revoke(self) -> Response:
        return _response(self._server.create_endpoint_response("revocation"))

    def _userinfo(self) -> Response:
        return _response(self._server.create_endpoint_response("userinfo"))

    def _signed_in(self, path: str, form: list[tuple[str, str]], secret: bytes) -> Identity | Response:
        """Who the sign-in form at ``path`` says signs in, or the form again with what was wrong (400)."""
        typed, errors = pages.read_sign_in(request.form)
        if typed is None:
            params = pages.request_params(form)
            return _html(pages.sign_in_page(path, params, secret, values=request.form, errors=errors), 400)
        return Identity(typed.user_id, typed.name, typed.email, typed.phone, int(self.state.clock()))
