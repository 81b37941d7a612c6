"""The dev identity provider: an OpenID Connect server on 127.0.0.1 for the desktop (``memmy-desktop``),
Authlib on Flask, served by werkzeug in a daemon thread; whoever signs in is whatever they type
(docs/architecture.md, "Local stack"). Its request log names method, path and status only (query strings
carry codes), and Authlib's DEBUG lines, which print tokens, are turned off."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
import re
import secrets
import threading
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

import jwt
from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector
from authlib.oauth2 import OAuth2Error
from cryptography.hazmat.primitives import serialization
from flask import Flask, Response, jsonify, request
from joserfc.jwk import RSAKey
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from memmy_local.serving import serve_in_background, stop_serving
from memmy_local.tokens import ALGORITHM, DEFAULT_AUDIENCE, SigningKey, key_id

from . import pages
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
from .records import CLIENT_ID, DEVICE_GRANT_TYPE, SCOPES, Identity, PublicClient, is_loopback_callback
from .state import WRONG_CODE_WINDOW_SECONDS, WRONG_CODES_PER_CLIENT, IdentityState, normalize_user_code

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


class IdentityProvider:
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
        self._form_secret = secrets.token_bytes(32)
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
        scope = client.get_allowed_scope(scope)
        now = int(self.state.clock())
        claims = {"iss": self.issuer, "aud": self.audience, "iat": now, "exp": now + self.ttl}
        claims |= user.claims() | {"client_id": client.get_client_id(), "scope": scope}
        token: dict[str, Any] = {
            "access_token": jwt.encode(claims, self.key, algorithm=ALGORITHM, headers={"kid": self.kid}),
            "token_type": "Bearer",
            "expires_in": self.ttl,
            "scope": scope,
        }
        if include_refresh_token:
            token["refresh_token"] = secrets.token_urlsafe(32)
        return token

    def _save_token(self, token: dict[str, Any], oauth_request: Any) -> None:
        if "refresh_token" in token:
            previous = oauth_request.refresh_token  # the rotated-away record on a refresh
            self.state.add_refresh(
                token["refresh_token"],
                client_id=oauth_request.client.get_client_id(),
                scope=token["scope"],
                identity=oauth_request.user,
                family=previous.family if previous is not None else None,
            )

    def discovery(self) -> dict[str, Any]:
        base = self.url
        return {
            "issuer": self.issuer,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": f"{base}/token",
            "device_authorization_endpoint": f"{base}/device_authorization",
            "revocation_endpoint": f"{base}/revoke",
            "userinfo_endpoint": f"{base}/userinfo",
            "jwks_uri": f"{base}/jwks.json",
            "scopes_supported": list(SCOPES),
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT_TYPE],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": [ALGORITHM],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "claims_supported": [
                "sub", "iss", "aud", "iat", "exp", "auth_time", "nonce", "name",
                "email", "email_verified", "phone_number", "phone_number_verified",
            ],
        }  # fmt: skip

    # -- the web app ----------------------------------------------------------------------------

    def _build_app(self) -> Flask:
        app = Flask(__name__)
        app.config["OAUTH2_SCOPES_SUPPORTED"] = list(SCOPES)
        self._server = self._authorization_server(app)
        for rule, methods, view in (
            ("/.well-known/openid-configuration", ["GET"], self._openid_configuration),
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
        """Authlib's server for the one public client, with the grants and endpoints of ``grants``."""
        client = PublicClient()
        server = AuthorizationServer(
            app, query_client=lambda cid: client if cid == CLIENT_ID else None, save_token=self._save_token
        )
        server.idp = self
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
        # Back to the client only at a redirect URI already checked; otherwise a page, never a redirect.
        if error.redirect_uri and is_loopback_callback(error.redirect_uri):
            return _response(self._server.handle_error_response(None, error))
        text = f"{error.error}: {error.description or 'the request was refused'}"
        return _html(pages.message_page("Sign-in refused", text), 400)

    # -- the routes -----------------------------------------------------------------------------

    def _openid_configuration(self) -> Response:
        return jsonify(self.discovery())

    def _jwks(self) -> Response:
        return jsonify({"keys": [self.jwk.as_dict(private=False)]})

    def _authorize(self) -> Response:
        secret = self._form_secret
        form = list(request.form.items(multi=True))
        if request.method == "POST" and not pages.form_is_ours(secret, form, request.form.get(pages.FORM_TOKEN)):
            return _html(pages.message_page("Sign-in refused", "This form was not made here; start again."), 400)
        try:
            grant = self._server.get_consent_grant(end_user=None)
        except OAuth2Error as error:
            return self._refused(error)
        if request.method == "GET":
            return _html(pages.sign_in_page("/authorize", list(request.args.items(multi=True)), secret))
        identity = self._signed_in("/authorize", form, secret)
        if isinstance(identity, Response):
            return identity
        return _response(self._server.create_authorization_response(grant_user=identity, grant=grant))

    def _token(self) -> Response:
        return _response(self._server.create_token_response())

    def _device_authorization(self) -> Response:
        return _response(self._server.create_endpoint_response("device_authorization"))

    def _revoke(self) -> Response:
        return _response(self._server.create_endpoint_response("revocation"))

    def _userinfo(self) -> Response:
        return _response(self._server.create_endpoint_response("userinfo"))

    def _device_page(self) -> Response:
        return _html(pages.device_code_page("/device", self._form_secret, code=request.args.get("user_code", "")))

    def _device_posted(self) -> Response:
        return self._device_sign_in(_html, self._form_secret)

    def _signed_in(self, path: str, form: list[tuple[str, str]], secret: bytes) -> Identity | Response:
        """Who the sign-in form at ``path`` says signs in, or the form again with what was wrong (400)."""
        typed, errors = pages.read_sign_in(request.form)
        if typed is None:
            params = pages.request_params(form)
            return _html(pages.sign_in_page(path, params, secret, values=request.form, errors=errors), 400)
        return Identity(typed.user_id, typed.name, typed.email, typed.phone, int(self.state.clock()))

    def _device_sign_in(self, html: Callable[..., Response], secret: bytes) -> Response:
        form = list(request.form.items(multi=True))
        if "login_user_id" not in request.form:  # the code, first
            return self._device_code_entered(html, secret)
        if not pages.form_is_ours(secret, form, request.form.get(pages.FORM_TOKEN)):
            return html(pages.message_page("Refused", "This form was not made here; start again."), 400)
        user_code = normalize_user_code(request.form.get("user_code", ""))
        identity = self._signed_in("/device", form, secret)
        if isinstance(identity, Response):
            return identity
        if not self.state.approve_device(user_code, identity):
            return html(
                pages.message_page(
                    "Code expired",
                    "That code has expired, was used, or was refused after too many wrong codes; start again.",
                ),
                400,
            )
        return html(pages.message_page("Device connected", "You are signed in: go back to your device."))

    def _device_code_entered(self, html: Callable[..., Response], secret: bytes) -> Response:
        """The device page's first form: the user code, limited per client address and per request."""
        expected = pages.form_token(secret, [])
        if not hmac.compare_digest(expected, request.form.get(pages.FORM_TOKEN, "")):
            return html(pages.message_page("Refused", "This form was not made here; start again."), 400)
        typed_code = request.form.get("user_code", "")
        entry = self.state.enter_user_code(typed_code, wrong_code_client(request.remote_addr or ""))
        if entry.retry_after:
            log.warning(
                "device page: too many wrong codes from one client, refused for %d s", entry.retry_after
            )
            minutes = math.ceil(entry.retry_after / 60)
            text = (
                f"Too many wrong codes were typed here ({WRONG_CODES_PER_CLIENT} in "
                f"{WRONG_CODE_WINDOW_SECONDS // 60} minutes): wait {minutes} minute{'s' if minutes != 1 else ''}, "
                "then type the code again."
            )
            refused = html(pages.message_page("Too many wrong codes", text), 429)
            refused.headers["Retry-After"] = str(entry.retry_after)
            return refused
        pending = entry.request
        if pending is None:
            errors = ["That code is unknown, expired or already used."]
            return html(pages.device_code_page("/device", secret, code=typed_code, errors=errors), 400)
        intro = f"<p>Code: <strong>{escape(pending.user_code)}</strong></p>"
        return html(pages.sign_in_page("/device", [("user_code", pending.user_code)], secret, intro=intro))


def wrong_code_client(address: str) -> str:
    """Whom a wrong user code counts against: the client's address, every loopback address being one
    client (a local program can send from any of 127.0.0.0/8, each of which would otherwise bring a fresh
    allowance and one more counter)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return "loopback" if ip.is_loopback or (mapped is not None and mapped.is_loopback) else address


def _html(body: str, status: int = 200) -> Response:
    return Response(body, status, pages.PAGE_HEADERS, content_type="text/html; charset=utf-8")


def _response(answer: object) -> Response:
    """What Authlib's Flask server answered (it has no type information): a Flask response."""
    assert isinstance(answer, Response)
    return answer
