"""The Authlib parts of an authorization server for MCP clients, shared by the service's (``mcp_auth``)
and the dev identity provider: the client as Authlib's grants see it, PKCE S256 required, RFC 8707's
``invalid_target``, and open RFC 7591 registration of public clients for ``kb.search``
(``McpRegistration``: a subclass says where a registered client is kept, ``store_client``)."""

from __future__ import annotations

import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import ClientMixin, InvalidRequestError
from authlib.oauth2.rfc7591 import (
    ClientRegistrationEndpoint,
    InvalidClientMetadataError,
    InvalidRedirectURIError,
)
from authlib.oauth2.rfc7636 import CodeChallenge

from memmy_kb.domain.mcp_auth.clients import (
    MCP_GRANT_TYPES,
    REGISTERED,
    ClientMetadataProblem,
    ClientRecord,
    checked_application_type,
    checked_redirect_uris,
    clean_client_name,
    is_loopback_http,
    redirect_uri_matches,
)
from memmy_kb.domain.remote_mcp.tokens import MCP_SCOPE

MAX_REGISTRATION_BYTES = 16 * 1024


class McpClient(ClientMixin):  # type: ignore[misc]
    """An MCP client as Authlib's grants see it: public, code + refresh, scope ``kb.search``."""

    def __init__(self, record: ClientRecord) -> None:
        self.record = record
        self.client_metadata = {
            "client_name": record.client_name,
            "redirect_uris": list(record.redirect_uris),
        }

    @property
    def client_name(self) -> str | None:
        return self.record.client_name

    def get_client_id(self) -> str:
        return self.record.client_id

    def get_default_redirect_uri(self) -> str | None:
        uris = self.record.redirect_uris
        return uris[0] if len(uris) == 1 and not is_loopback_http(uris[0]) else None

    def get_allowed_scope(self, scope: str | None) -> str:
        return MCP_SCOPE  # whatever was asked: the one thing an MCP client may do

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(redirect_uri_matches(uri, redirect_uri) for uri in self.record.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        return False

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        return method == "none"

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in MCP_GRANT_TYPES


class S256Required(CodeChallenge):  # type: ignore[misc]
    """PKCE is required at the authorization request already, and only S256."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]  # noqa: RUF012 - Authlib's class attribute
    DEFAULT_CODE_CHALLENGE_METHOD = "S256"

    def validate_code_challenge(self, grant: Any, redirect_uri: str) -> None:
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("Missing 'code_challenge': PKCE (S256) is required.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("'code_challenge_method' must be S256.")
        super().validate_code_challenge(grant, redirect_uri)


class InvalidTargetError(OAuth2Error):  # type: ignore[misc]
    """RFC 8707 2: the requested resource is invalid, unknown or not this client's."""

    error = "invalid_target"
    status_code = 400


def check_token_resource(requested: Sequence[str], granted: str | None) -> None:
    """A token request may repeat its grant's resource, or name none; anything else is ``invalid_target``."""
    if not requested:
        return
    if granted is None:
        raise InvalidTargetError("This grant is for Memmy's API only: send no 'resource'.")
    if len(requested) > 1 or requested[0] != granted:
        raise InvalidTargetError(f"This grant is for {granted} only.")


def metadata_error(problem: ClientMetadataProblem) -> OAuth2Error:
    """RFC 7591 3.2.2: ``invalid_redirect_uri`` for the redirect URIs, ``invalid_client_metadata`` else."""
    if problem.field == "redirect_uris":
        return InvalidRedirectURIError(str(problem))
    return InvalidClientMetadataError(str(problem))


class RegistrationsCapped(OAuth2Error):  # type: ignore[misc]
    """Too many registrations for now: 429 with ``Retry-After``."""

    error = "temporarily_unavailable"
    status_code = 429

    def __init__(self, description: str, retry_after: int) -> None:
        super().__init__(description)
        self.retry_after = retry_after

    def get_headers(self) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = super().get_headers()
        return [*headers, ("Retry-After", str(self.retry_after))]


class McpRegistration(ClientRegistrationEndpoint, ABC):  # type: ignore[misc]
    """RFC 7591 registration, open (no initial access token). Every client registered is public: whatever
    ``token_endpoint_auth_method`` is asked for, ``none`` is registered and no secret is issued (RFC 7591
    3.2.1 lets the server substitute values); its scope is ``kb.search``. ``store_client`` keeps the
    record (and raises an ``OAuth2Error`` when it may not)."""

    @abstractmethod
    def store_client(self, record: ClientRecord, request: Any) -> None:
        """Keep ``record``: each server in its own store."""

    def now(self) -> float:
        return time.time()

    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration: anyone may register a client (it still needs a person's consent)

    def get_server_metadata(self) -> dict[str, Any]:
        return {"grant_types_supported": list(MCP_GRANT_TYPES), "response_types_supported": ["code"]}

    def extract_client_metadata(self, request: Any) -> dict[str, Any]:
        data = request.payload.data
        try:
            redirect_uris = checked_redirect_uris(data.get("redirect_uris"))
            client_name = clean_client_name(data.get("client_name"))
            application_type = checked_application_type(data.get("application_type"))
        except ClientMetadataProblem as problem:
            raise metadata_error(problem) from None
        metadata: dict[str, Any] = super().extract_client_metadata(request)
        metadata |= {
            "redirect_uris": list(redirect_uris),
            "token_endpoint_auth_method": "none",
            "grant_types": list(MCP_GRANT_TYPES),
            "response_types": ["code"],
            "scope": MCP_SCOPE,
            "application_type": application_type,
        }
        metadata.pop("client_name", None)
        if client_name is not None:
            metadata["client_name"] = client_name
        return metadata

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        return {"client_id": f"mcp-{secrets.token_urlsafe(24)}", "client_id_issued_at": int(self.now())}

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> ClientRecord:
        record = ClientRecord(
            client_id=client_info["client_id"],
            kind=REGISTERED,
            redirect_uris=tuple(client_metadata["redirect_uris"]),
            created_at=float(client_info["client_id_issued_at"]),
            client_name=client_metadata.get("client_name"),
            application_type=client_metadata["application_type"],
        )
        self.store_client(record, request)
        return record
