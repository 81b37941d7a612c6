"""``POST /register``: RFC 7591 dynamic client registration for MCP clients, open (no initial access
token) and capped (``state.REGISTRATIONS_PER_HOUR``, ``state.MAX_CLIENTS``). Every client registered is
public: whatever ``token_endpoint_auth_method`` is asked for, ``none`` is registered and no secret is
issued (RFC 7591 3.2.1 lets the server substitute values); its scope is ``kb.search``."""

from __future__ import annotations

import secrets
from typing import Any

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc7591 import (
    ClientRegistrationEndpoint,
    InvalidClientMetadataError,
    InvalidRedirectURIError,
)

from memmy_local.tokens import MCP_SCOPE

from .clients import (
    MCP_GRANT_TYPES,
    REGISTERED,
    ClientMetadataProblem,
    ClientRecord,
    checked_application_type,
    checked_redirect_uris,
    clean_client_name,
)
from .issuer import TokenIssuer
from .state import RegistrationRefused

MAX_REGISTRATION_BYTES = 16 * 1024


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


def metadata_error(problem: ClientMetadataProblem) -> OAuth2Error:
    """RFC 7591 3.2.2: ``invalid_redirect_uri`` for the redirect URIs, ``invalid_client_metadata`` else."""
    if problem.field == "redirect_uris":
        return InvalidRedirectURIError(str(problem))
    return InvalidClientMetadataError(str(problem))


class Registration(ClientRegistrationEndpoint):  # type: ignore[misc]
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
        now = int(self._issuer().state.clock())
        return {"client_id": f"mcp-{secrets.token_urlsafe(24)}", "client_id_issued_at": now}

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
        try:
            self._issuer().state.register_client(record)
        except RegistrationRefused as refused:
            raise RegistrationsCapped(str(refused), refused.retry_after) from None
        return record

    def _issuer(self) -> TokenIssuer:
        issuer: TokenIssuer = self.server.idp
        return issuer
