"""The ports of the service's own authorization server for MCP clients (docs/remote-mcp.md, "Authorization
servers"): where it keeps clients, sign-ins under way, codes and refresh tokens; what signs
its access tokens; what fetches a client ID metadata document; and the login provider a person signs in
with (the Cognito pool, or ``JwtIssuer``'s provider).

The values are the domain's own (plain dataclasses); times are epoch seconds. Codes and refresh tokens
are stored by their SHA-256 (``token_digest``), never as issued.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ClientRecord:
    """One MCP client: registered (RFC 7591, ``kind`` "registered") or named by a client ID metadata
    document (``kind`` "metadata_document", its ``client_id`` the document's https URL). All are public
    clients: no secret, authorization code with PKCE S256 and refresh tokens, scope ``kb.search``."""

    client_id: str
    kind: str
    redirect_uris: tuple[str, ...]
    created_at: float
    client_name: str | None = None
    application_type: str = "native"


@dataclass(frozen=True)
class PendingAuthorization:
    """A sign-in under way, from ``GET /oauth/authorize`` to the consent page's answer.

    ``params`` are the client's authorization request as it sent it (validated). ``browser`` is the
    SHA-256 of the cookie set on the browser that started it: the callback and the consent must come from
    that browser. ``login_verifier`` and ``login_nonce`` are for the login provider's leg (PKCE and the ID
    token's nonce). ``user_id`` and ``consent`` (the SHA-256 of the consent form's token) are set once the
    person has signed in."""

    request_id: str
    client_id: str
    params: dict[str, str]
    browser: str
    login_verifier: str
    login_nonce: str
    created_at: int
    expires_at: int
    user_id: str | None = None
    consent: str | None = None
    signed_in_at: int | None = None


@dataclass(frozen=True)
class AuthorizationCode:
    """A code issued after consent, single use, stored by digest."""

    digest: str
    client_id: str
    redirect_uri: str
    scope: str
    user_id: str
    auth_time: int
    code_challenge: str
    resource: str
    expires_at: int


@dataclass(frozen=True)
class RefreshRecord:
    """A refresh token, stored by digest. Each refresh spends it and issues the next one of the same
    ``family``; spending a spent one revokes the family (a stolen token's replay ends the grant)."""

    digest: str
    family: str
    client_id: str
    client_name: str | None
    user_id: str
    scope: str
    resource: str
    auth_time: int
    expires_at: int
    spent: bool = False


class ClientMetadataProblem(ValueError):
    """A client's metadata cannot be used; the message is one sentence saying why. ``field`` names the
    metadata field (``redirect_uris`` makes it RFC 7591's ``invalid_redirect_uri``)."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class RegistrationRefused(Exception):
    """Too many registrations for now; ``retry_after`` seconds until the next window."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class AuthorizationStore(Protocol):
    """Clients, sign-ins under way, codes and refresh tokens (``memmy_kb.adapters.dynamodb.mcp_auth``).
    Every item carries its expiry for the table's TTL, and every read checks the expiry itself (TTL
    deletes late)."""

    def put_client(self, client: ClientRecord, *, source: str, now: int) -> None:
        """Register ``client``; ``RegistrationRefused`` past the registrations an hour from ``source``
        (the caller's IP address) or in all."""
        ...

    def get_client(self, client_id: str) -> ClientRecord | None: ...

    def put_pending(self, pending: PendingAuthorization) -> None: ...

    def get_pending(self, request_id: str, now: int) -> PendingAuthorization | None:
        """A consistent read; None once expired."""
        ...

    def sign_in_pending(self, request_id: str, user_id: str, consent: str, now: int) -> bool:
        """Record who signed in and the consent form's token digest, once (False: already signed in,
        gone or expired)."""
        ...

    def take_pending(self, request_id: str, consent: str, now: int) -> PendingAuthorization | None:
        """Delete and return the signed-in sign-in whose consent digest is ``consent`` (None otherwise):
        a consent form can be answered once."""
        ...

    def put_code(self, code: AuthorizationCode) -> None: ...

    def take_code(self, digest: str, now: int) -> AuthorizationCode | None:
        """Delete and return the code (None: unknown, taken or expired): a code is spent once."""
        ...

    def put_refresh(self, record: RefreshRecord) -> None: ...

    def spend_refresh(self, digest: str, now: int) -> RefreshRecord | None:
        """Mark the token spent and return it while it was unspent, unexpired and its family not revoked.
        A spent token presented again revokes its family and returns None; so does an unknown one."""
        ...

    def revoke_family(self, family: str, now: int) -> None: ...

    def find_refresh(self, digest: str, now: int) -> RefreshRecord | None:
        """The unexpired token (spent or not), for revocation."""
        ...


class TokenSigner(Protocol):
    """Signs the access tokens (``memmy_kb.adapters.kms_signer``: a KMS RSA key, RS256)."""

    def sign(self, claims: dict[str, Any]) -> str:
        """A compact JWS of ``claims`` with ``alg`` RS256, ``typ`` at+jwt and the key's ``kid``."""
        ...

    def jwks(self) -> dict[str, Any]:
        """The public key set, ``{"keys": [...]}``, as ``GET /oauth/jwks`` serves it."""
        ...


class ClientMetadataFetcher(Protocol):
    """Fetches a client ID metadata document (``memmy_kb.adapters.client_metadata``)."""

    def fetch(self, url: str) -> bytes:
        """The document's body; ``ClientMetadataProblem`` with a sentence when
        it cannot be had: not 200, not JSON, too large, too slow, a redirect, a host not allowed."""
        ...


@dataclass(frozen=True)
class LoginRequest:
    """What the login provider's authorization request carries for one sign-in."""

    redirect_uri: str
    state: str
    nonce: str
    code_verifier: str


@dataclass(frozen=True)
class SignedIn:
    """Who the login provider says signed in: the ID token's verified ``sub`` and when."""

    user_id: str
    auth_time: int
    claims: dict[str, Any] = field(default_factory=dict)


class LoginRefused(Exception):
    """The login provider's answer cannot be used; the message is one sentence for the page."""


class LoginProvider(Protocol):
    """The OpenID provider people sign in with (``memmy_kb.adapters.login_provider``)."""

    def authorization_url(self, request: LoginRequest) -> str:
        """Where to send the browser: the provider's authorization endpoint with code + PKCE S256."""
        ...

    def finish(self, code: str, request: LoginRequest) -> SignedIn:
        """Exchange ``code`` at the token endpoint and verify the ID token (signature against the
        provider's JWKS, issuer, audience = our client id, expiry, nonce); ``LoginRefused`` otherwise."""
        ...


@dataclass(frozen=True)
class McpAuthPorts:
    """What the authorization server runs on (``memmy_kb.composition.get_mcp_auth``)."""

    store: AuthorizationStore
    signer: TokenSigner
    metadata: ClientMetadataFetcher
    login: LoginProvider
