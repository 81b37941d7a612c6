"""Authlib's authorization server on Lambda events, for MCP clients (docs/remote-mcp.md, "Authorization
servers").

``McpAuthServer`` is built per request (``ServerContext``: the ports, the issuer, the MCP resource, the
caller's address and the time): Authlib's grants and endpoints read the store through it. Registration
(``McpRegistration``) stores through ``AuthorizationStore.put_client``; the code grant requires PKCE S256
and keeps the resource; the refresh grant rotates (a spent token presented again revokes its family,
``spend_refresh``); revocation ends a refresh token's family. Codes and refresh tokens are stored by
digest, never as issued.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

from authlib.oauth2 import AuthorizationServer
from authlib.oauth2.rfc6749 import InvalidClientError, InvalidGrantError, grants
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc9207 import IssuerParameter

from memmy_kb.api.mcp_auth.browser import digest
from memmy_kb.api.mcp_auth.clients import (
    InvalidTargetError,
    McpClient,
    McpRegistration,
    RegistrationsCapped,
    S256Required,
    check_token_resource,
)
from memmy_kb.api.mcp_auth.requests import Answer, HttpEvent, JsonEvent, OAuth2Event
from memmy_kb.domain.mcp_auth.metadata_documents import (
    CACHE_SECONDS,
    checked_document_url,
    is_metadata_document_url,
    parse_client_metadata,
)
from memmy_kb.domain.ports.mcp_auth import (
    AuthorizationCode,
    ClientMetadataProblem,
    ClientRecord,
    McpAuthPorts,
    RefreshRecord,
    RegistrationRefused,
)
from memmy_kb.domain.remote_mcp.tokens import mcp_access_claims

ACCESS_TOKEN_SECONDS = 3600
CODE_SECONDS = 300
REFRESH_SECONDS = 30 * 24 * 3600


@dataclass(frozen=True)
class ServerContext:
    """What one request's server runs on."""

    ports: McpAuthPorts
    issuer: str
    resource: str
    scope: str
    source: str
    now: int


@dataclass(frozen=True)
class Grantee:
    """Who a grant is for: the person and when they signed in and consented."""

    user_id: str
    auth_time: int


class IssuedCode:
    """A stored code as Authlib's code grant and PKCE read it."""

    def __init__(self, record: AuthorizationCode) -> None:
        self.record = record
        self.code_challenge = record.code_challenge
        self.code_challenge_method = "S256"

    def get_redirect_uri(self) -> str:
        return self.record.redirect_uri

    def get_scope(self) -> str:
        return self.record.scope


class IssuedRefresh:
    """A spent refresh token's record as Authlib's refresh grant and revocation read it."""

    def __init__(self, record: RefreshRecord) -> None:
        self.record = record

    def check_client(self, client: Any) -> bool:
        return bool(client.get_client_id() == self.record.client_id)

    def get_scope(self) -> str:
        return self.record.scope


def _context(server: Any) -> ServerContext:
    context: ServerContext = server.context
    return context


class McpAuthServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's server whose requests are payload-2.0 events (``HttpEvent``) and whose answers are
    ``Answer``s, as its Flask integration does with Flask's."""

    def __init__(self, context: ServerContext) -> None:
        authlib_log = logging.getLogger("authlib")
        if authlib_log.level < logging.INFO:  # its DEBUG lines print whole token responses
            authlib_log.setLevel(logging.INFO)
        super().__init__(scopes_supported=[context.scope])
        self.context = context
        self.issuer_parameter = Issuer(context.issuer)
        self.register_extension(self.issuer_parameter)
        self.register_endpoint(Registration)
        self.register_grant(CodeGrant, [S256Required(required=True)])
        self.register_grant(RefreshGrant)
        self.register_endpoint(Revocation)

    def create_oauth2_request(self, request: Any) -> OAuth2Event:
        if isinstance(request, OAuth2Event):
            return request
        return OAuth2Event.of(request, self.context.issuer)

    def create_json_request(self, request: Any) -> JsonEvent:
        assert isinstance(request, HttpEvent)
        return JsonEvent(request, self.context.issuer)

    def handle_response(self, status: int, body: Any, headers: Any) -> Answer:
        return Answer.of(status, body, headers)

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        pass  # no listeners

    def query_client(self, client_id: str | None) -> McpClient | None:
        """The registered client, or the one a metadata document names (fetched, and cached in the store
        for ``CACHE_SECONDS``)."""
        if not client_id:
            return None
        ports, now = self.context.ports, self.context.now
        record = ports.store.get_client(client_id)
        if is_metadata_document_url(client_id) and (record is None or record.created_at + CACHE_SECONDS <= now):
            try:
                body = ports.metadata.fetch(checked_document_url(client_id))
                record = parse_client_metadata(client_id, body, now=now)
                ports.store.put_client(record, source=self.context.source, now=now)
            except (ClientMetadataProblem, RegistrationRefused) as problem:
                raise InvalidClientError(
                    description=f"The client's metadata document cannot be used: {problem}"
                ) from None
        return McpClient(record) if record is not None else None

    def save_token(self, token: dict[str, Any], request: Any) -> None:
        """Store the new refresh token (by digest) in the family of the one it replaces, or a new family."""
        refresh = token.get("refresh_token")
        if not refresh:
            return
        context = self.context
        previous: IssuedRefresh | None = request.refresh_token
        if previous is not None:
            family, grant_resource, user = previous.record.family, previous.record.resource, request.user
        else:
            family, grant_resource, user = secrets.token_urlsafe(16), request.authorization_code.record.resource, request.user
        context.ports.store.put_refresh(
            RefreshRecord(
                digest=digest(refresh),
                family=family,
                client_id=request.client.get_client_id(),
                client_name=request.client.client_name,
                user_id=user.user_id,
                scope=token["scope"],
                resource=grant_resource,
                auth_time=user.auth_time,
                expires_at=context.now + REFRESH_SECONDS,
            )
        )

    def tokens(self, client: Any, user: Grantee, scope: str, resource: str, with_refresh: bool) -> dict[str, Any]:
        """The token response: an access token signed by the ``TokenSigner`` for ``resource``, and a new
        refresh token."""
        context = self.context
        claims = mcp_access_claims(
            user.user_id, issuer=context.issuer, resource=resource, client_id=client.get_client_id(),
            auth_time=user.auth_time, now=context.now, ttl_seconds=ACCESS_TOKEN_SECONDS,
            client_name=client.client_name, scope=scope,
        )  # fmt: skip
        token: dict[str, Any] = {
            "access_token": context.ports.signer.sign(claims),
            "token_type": "Bearer",
            "expires_in": ACCESS_TOKEN_SECONDS,
            "scope": scope,
        }
        if with_refresh:
            token["refresh_token"] = secrets.token_urlsafe(32)
        return token


class Issuer(IssuerParameter):  # type: ignore[misc]
    """RFC 9207: ``iss`` on every authorization response, errors included."""

    def __init__(self, issuer: str) -> None:
        self.issuer = issuer

    def get_issuer(self) -> str:
        return self.issuer


class Registration(McpRegistration):
    """RFC 7591 open registration, stored through ``put_client`` and counted by the caller's address."""

    def now(self) -> float:
        return float(_context(self.server).now)

    def store_client(self, record: ClientRecord, request: Any) -> None:
        context = _context(self.server)
        try:
            context.ports.store.put_client(record, source=context.source, now=context.now)
        except RegistrationRefused as refused:
            raise RegistrationsCapped(str(refused), refused.retry_after) from None


class CodeGrant(grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012 - Authlib's class attribute

    def requested_resource(self) -> str:
        """RFC 8707: no ``resource`` means the MCP endpoint; naming another (or several) is
        ``invalid_target``."""
        requested = self.request.payload.datalist.get("resource", [])
        resource = _context(self.server).resource
        if len(requested) > 1 or (requested and requested[0] != resource):
            raise InvalidTargetError(f"The one resource an MCP client may ask for is {resource}.")
        return resource

    def validate_authorization_request(self) -> str:
        redirect_uri: str = super().validate_authorization_request()
        try:
            self.requested_resource()
        except InvalidTargetError as error:
            error.redirect_uri = redirect_uri  # validated: the answer goes back to the client
            raise
        return redirect_uri

    def validate_token_request(self) -> None:
        super().validate_token_request()
        check_token_resource(self.request.payload.datalist.get("resource", []), self.request.authorization_code.record.resource)

    def save_authorization_code(self, code: str, request: Any) -> None:
        context, user = _context(self.server), request.user
        context.ports.store.put_code(
            AuthorizationCode(
                digest=digest(code),
                client_id=request.client.get_client_id(),
                redirect_uri=request.payload.redirect_uri or "",
                scope=request.scope or context.scope,
                user_id=user.user_id,
                auth_time=user.auth_time,
                code_challenge=request.payload.data.get("code_challenge", ""),
                resource=self.requested_resource(),
                expires_at=context.now + CODE_SECONDS,
            )
        )

    def query_authorization_code(self, code: str, client: Any) -> IssuedCode | None:
        context = _context(self.server)
        record = context.ports.store.take_code(digest(code), context.now)
        if record is None or record.client_id != client.get_client_id():
            return None
        return IssuedCode(record)

    def delete_authorization_code(self, authorization_code: IssuedCode) -> None:
        pass  # taken (gone) when it was presented

    def authenticate_user(self, authorization_code: IssuedCode) -> Grantee:
        return Grantee(authorization_code.record.user_id, authorization_code.record.auth_time)

    def generate_token(self, user: Grantee | None = None, scope: str | None = None, grant_type: str | None = None,
                       expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:  # fmt: skip
        assert user is not None
        server: McpAuthServer = self.server
        resource = self.request.authorization_code.record.resource
        return server.tokens(self.request.client, user, server.context.scope, resource, include_refresh_token)


class RefreshGrant(grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012 - Authlib's class attribute
    INCLUDE_NEW_REFRESH_TOKEN = True

    def validate_token_request(self) -> None:
        super().validate_token_request()
        check_token_resource(self.request.payload.datalist.get("resource", []), self.request.refresh_token.record.resource)

    def authenticate_refresh_token(self, refresh_token: str) -> IssuedRefresh | None:
        """Spend the token; refused when it was spent (its family is revoked then), or when the person
        disconnected this client at or after the grant's sign-in."""
        context = _context(self.server)
        record = context.ports.store.spend_refresh(digest(refresh_token), context.now)
        if record is None:
            return None
        if disconnected_since(record):
            context.ports.store.revoke_family(record.family, context.now)
            raise InvalidGrantError("This client was disconnected; connect it again.")
        return IssuedRefresh(record)

    def authenticate_user(self, refresh_token: IssuedRefresh) -> Grantee:
        return Grantee(refresh_token.record.user_id, refresh_token.record.auth_time)

    def revoke_old_credential(self, refresh_token: IssuedRefresh) -> None:
        pass  # spent when it was presented

    def generate_token(self, user: Grantee | None = None, scope: str | None = None, grant_type: str | None = None,
                       expires_in: int | None = None, include_refresh_token: bool = True) -> dict[str, Any]:  # fmt: skip
        assert user is not None
        server: McpAuthServer = self.server
        record = self.request.refresh_token.record
        return server.tokens(self.request.client, user, record.scope, record.resource, include_refresh_token)


def disconnected_since(record: RefreshRecord) -> bool:
    """Whether the person disconnected the grant's client at or after the grant's sign-in."""
    from memmy_kb import composition
    from memmy_kb.domain.remote_mcp.connections import connection_id

    found = composition.get_mcp_stores()[0].get_connection(record.user_id, connection_id(record.client_id))
    if found is None or found.state != "revoked":
        return False
    return found.revoked_at is None or found.revoked_at >= record.auth_time


class Revocation(RevocationEndpoint):  # type: ignore[misc]
    """RFC 7009: a refresh token ends its family; anything else (access tokens live out their hour) is
    answered 200 and changes nothing."""

    CLIENT_AUTH_METHODS = ["none"]  # noqa: RUF012 - Authlib's class attribute

    def query_token(self, token_string: str, token_type_hint: str | None) -> IssuedRefresh | None:
        if token_type_hint == "access_token":  # noqa: S105 - a hint's name
            return None
        context = _context(self.server)
        record = context.ports.store.find_refresh(digest(token_string), context.now)
        return IssuedRefresh(record) if record is not None else None

    def revoke_token(self, token: IssuedRefresh, request: Any) -> None:
        context = _context(self.server)
        context.ports.store.revoke_family(token.record.family, context.now)
