"""The routes of the ``mcp_auth`` function (docs/remote-mcp.md, "Authorization servers"), by the
event's ``routeKey``: metadata, registration, the authorization request, the login provider's callback,
the consent, the token and revocation endpoints and the public keys.

A sign-in goes: ``GET /oauth/authorize`` (validated by Authlib, kept as a ``PendingAuthorization``, a
cookie set on the browser) → the login provider → ``GET /oauth/callback`` (same browser; the consent
page) → ``POST /oauth/consent`` (same browser, once) → the client's redirect URI with a code and ``iss``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import AccessDeniedError

from memmy_kb.api.mcp_auth import pages
from memmy_kb.api.mcp_auth.browser import browser_cookie, cleared_cookie, digest, new_secret, same_browser
from memmy_kb.api.mcp_auth.clients import MAX_REGISTRATION_BYTES
from memmy_kb.api.mcp_auth.requests import Answer, HttpEvent, MultiValues, OAuth2Event, json_answer
from memmy_kb.api.mcp_auth.server import Grantee, McpAuthServer, ServerContext
from memmy_kb.api.mcp_endpoint.events import BadEvent
from memmy_kb.domain.ports.mcp_auth import LoginRefused, LoginRequest, PendingAuthorization
from memmy_kb.observability import logger
from memmy_kb.settings import Settings, get_settings

PENDING_SECONDS = 600
CALLBACK_PATH = "/oauth/callback"
KEYS_CACHE = "public, max-age=300"


def issuer_of(settings: Settings, event: HttpEvent) -> str:
    """The configured issuer, else ``https://<the request's domain>`` (no trailing slash)."""
    return settings.mcp_auth_issuer or f"https://{event.domain}"


def resource_of(settings: Settings, event: HttpEvent) -> str:
    """The MCP endpoint's URL: the configured one, else ``https://<the request's domain>/mcp``."""
    return settings.mcp_resource_url or f"https://{event.domain}/mcp"


def server_metadata(issuer: str, scope: str) -> dict[str, Any]:
    """RFC 8414 metadata of this authorization server."""
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/oauth/authorize",
        "token_endpoint": f"{issuer}/oauth/token",
        "registration_endpoint": f"{issuer}/oauth/register",
        "revocation_endpoint": f"{issuer}/oauth/revoke",
        "jwks_uri": f"{issuer}/oauth/jwks",
        "client_id_metadata_document_supported": True,
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": [scope],
        "authorization_response_iss_parameter_supported": True,
    }


def handle_mcp_auth(event: dict[str, Any]) -> dict[str, Any]:
    """The proxy result of one request to a route of the ``mcp_auth`` function."""
    settings = get_settings()
    try:
        request = HttpEvent.of(event)
    except BadEvent as err:
        return json_answer(400, {"error": "invalid_request", "error_description": str(err)}).proxy_result()
    route = str(event.get("routeKey", ""))
    issuer = issuer_of(settings, request)
    if route == "GET /.well-known/oauth-authorization-server":
        return json_answer(200, server_metadata(issuer, settings.mcp_scope), {"cache-control": KEYS_CACHE}).proxy_result()
    handler = ROUTES.get(route)
    if handler is None and route != "GET /oauth/jwks":
        return json_answer(404, {"error": "not_found", "error_description": f"No route {route}."}).proxy_result()
    from memmy_kb import composition

    ports = composition.get_mcp_auth()
    if handler is None:
        return json_answer(200, ports.signer.jwks(), {"cache-control": KEYS_CACHE}).proxy_result()
    context = ServerContext(ports, issuer, resource_of(settings, request), settings.mcp_scope, request.source_ip, int(time.time()))
    try:
        return handler(McpAuthServer(context), request).proxy_result()
    except BadEvent as err:  # the query or the form, read when the route needs them
        return json_answer(400, {"error": "invalid_request", "error_description": str(err)}).proxy_result()


def _lang(event: HttpEvent) -> str:
    return pages.language(event.headers.get("accept-language"))


def refused(server: McpAuthServer, event: HttpEvent, error: OAuth2Error, client_id: str | None) -> Answer:
    """Back to the client's redirect URI (with ``iss``) once it is known to be the client's; else a page."""
    if error.redirect_uri and _client_accepts(server, client_id, error.redirect_uri):
        answer: Answer = server.handle_error_response(None, error)
        server.issuer_parameter.add_issuer_parameter(server, answer)
        return answer
    detail = f"{error.error}: {error.description or ''}".rstrip(": ")
    return pages.error_page(_lang(event), "bad_request", detail)


def _client_accepts(server: McpAuthServer, client_id: str | None, redirect_uri: str) -> bool:
    try:
        client = server.query_client(client_id)
    except OAuth2Error:
        return False
    return client is not None and bool(client.check_redirect_uri(redirect_uri))


def register(server: McpAuthServer, event: HttpEvent) -> Answer:
    if len(event.body) > MAX_REGISTRATION_BYTES:
        text = f"The client metadata may have at most {MAX_REGISTRATION_BYTES // 1024} KB."
        return json_answer(413, {"error": "invalid_client_metadata", "error_description": text})
    if not isinstance(event.json_body(), dict):
        text = "The body must be a JSON object of client metadata, sent as application/json."
        return json_answer(400, {"error": "invalid_client_metadata", "error_description": text})
    answer: Answer = server.create_endpoint_response("client_registration", event)
    return answer


def authorize(server: McpAuthServer, event: HttpEvent) -> Answer:
    """Validate the client's request, keep it, set the browser's cookie and send it to the login provider."""
    client_id = event.query.get("client_id")
    try:
        server.get_consent_grant(request=event, end_user=None)
    except OAuth2Error as error:
        return refused(server, event, error, client_id)
    context = server.context
    cookie, request_id = new_secret(), secrets.token_urlsafe(32)
    pending = PendingAuthorization(
        request_id=request_id, client_id=str(client_id), params=dict(event.query.pairs), browser=digest(cookie),
        login_verifier=secrets.token_urlsafe(48), login_nonce=secrets.token_urlsafe(16),
        created_at=context.now, expires_at=context.now + PENDING_SECONDS,
    )  # fmt: skip
    context.ports.store.put_pending(pending)
    url = context.ports.login.authorization_url(_login_request(context, pending))
    return Answer(302, {"location": url, "cache-control": "no-store"}, cookies=[browser_cookie(cookie)])


def _login_request(context: ServerContext, pending: PendingAuthorization) -> LoginRequest:
    return LoginRequest(
        redirect_uri=f"{context.issuer}{CALLBACK_PATH}",
        state=pending.request_id,
        nonce=pending.login_nonce,
        code_verifier=pending.login_verifier,
    )


def _own_pending(server: McpAuthServer, event: HttpEvent, request_id: str | None) -> PendingAuthorization | Answer:
    """The sign-in under way that this browser started, or the page that says why not."""
    context = server.context
    pending = context.ports.store.get_pending(request_id, context.now) if request_id else None
    if pending is None:
        return pages.error_page(_lang(event), "expired")
    if not same_browser(event.cookies, pending.browser):
        logger.info("mcp_auth: a sign-in came back in another browser")
        return pages.error_page(_lang(event), "other_browser", status=403)
    return pending


def callback(server: McpAuthServer, event: HttpEvent) -> Answer:
    """The login provider's answer: who signed in, then the consent page (or ``access_denied`` to the
    client when the provider refused)."""
    query, context = event.query, server.context
    pending = _own_pending(server, event, query.get("state"))
    if isinstance(pending, Answer):
        return pending
    if query.get("error") or not query.get("code"):
        denied = AccessDeniedError("The sign-in was not completed.", state=pending.params.get("state"))
        return _answer_client(server, event, pending, denied)
    try:
        signed = context.ports.login.finish(str(query.get("code")), _login_request(context, pending))
    except LoginRefused as err:
        return pages.error_page(_lang(event), "login_failed", str(err))
    consent = new_secret()
    if not context.ports.store.sign_in_pending(pending.request_id, signed.user_id, digest(consent), context.now):
        return pages.error_page(_lang(event), "expired")
    try:
        client = server.query_client(pending.client_id)
    except OAuth2Error as error:
        return refused(server, event, error, None)
    redirect_uri = pending.params.get("redirect_uri") or (client.get_default_redirect_uri() if client else None)
    if client is None or not redirect_uri:
        return pages.error_page(_lang(event), "bad_request")
    claims = signed.claims
    shown = claims.get("email") or claims.get("phone_number") or claims.get("name") or signed.user_id
    parts = urlsplit(redirect_uri)
    return pages.consent_page(
        _lang(event), request_id=pending.request_id, consent=consent, user=str(shown),
        client_name=client.client_name, client_id=client.get_client_id(), redirect_host=parts.hostname or "",
        redirect_origin=f"{parts.scheme}://{parts.netloc}",
    )  # fmt: skip


def _answer_client(server: McpAuthServer, event: HttpEvent, pending: PendingAuthorization, error: OAuth2Error) -> Answer:
    """An error for the client, at the redirect URI its request named (validated then), with ``iss``."""
    try:
        client = server.query_client(pending.client_id)
    except OAuth2Error as err:
        return refused(server, event, err, None)
    error.redirect_uri = pending.params.get("redirect_uri") or (client.get_default_redirect_uri() if client else None)
    answer = refused(server, event, error, pending.client_id)
    answer.cookies.append(cleared_cookie())
    return answer


def consent(server: McpAuthServer, event: HttpEvent) -> Answer:
    """The consent form answered: Allow → a code for the client; Deny → ``access_denied``. Once."""
    form, context = event.form, server.context
    pending = _own_pending(server, event, form.get(pages.REQUEST_FIELD))
    if isinstance(pending, Answer):
        return pending
    taken = context.ports.store.take_pending(pending.request_id, digest(form.get(pages.CONSENT_FIELD, "")), context.now)
    if taken is None or taken.user_id is None:
        return pages.error_page(_lang(event), "expired")
    params = MultiValues(taken.params.items())
    uri = f"{context.issuer}/oauth/authorize?{urlencode(params.pairs)}"
    request = OAuth2Event("GET", uri, event.headers, params, MultiValues([]))
    try:
        grant = server.get_authorization_grant(request)
    except OAuth2Error as error:
        return refused(server, event, error, taken.client_id)
    user = Grantee(taken.user_id, context.now) if form.get(pages.DECISION_FIELD) == "allow" else None
    answer: Answer = server.create_authorization_response(request=request, grant_user=user, grant=grant)
    answer.cookies.append(cleared_cookie())
    answer.headers["cache-control"] = "no-store"
    return answer


def token(server: McpAuthServer, event: HttpEvent) -> Answer:
    answer: Answer = server.create_token_response(event)
    return answer


def revoke(server: McpAuthServer, event: HttpEvent) -> Answer:
    answer: Answer = server.create_endpoint_response("revocation", event)
    return answer


ROUTES: dict[str, Callable[[McpAuthServer, HttpEvent], Answer]] = {
    "POST /oauth/register": register,
    "GET /oauth/authorize": authorize,
    "GET /oauth/callback": callback,
    "POST /oauth/consent": consent,
    "POST /oauth/token": token,
    "POST /oauth/revoke": revoke,
}
