"""``POST /register``: RFC 7591 dynamic client registration for MCP clients, open (no initial access
token) and capped (``state.REGISTRATIONS_PER_HOUR``, ``state.MAX_CLIENTS``). Every client registered is
public: whatever ``token_endpoint_auth_method`` is asked for, ``none`` is registered and no secret is
issued (RFC 7591 3.2.1 lets the server substitute values); its scope is ``kb.search``."""

from __future__ import annotations

from typing import Any

from memmy_kb.api.mcp_auth.clients import MAX_REGISTRATION_BYTES as MAX_REGISTRATION_BYTES
from memmy_kb.api.mcp_auth.clients import McpRegistration, RegistrationsCapped
from memmy_kb.domain.mcp_auth.clients import ClientRecord

from .issuer import TokenIssuer
from .state import RegistrationRefused


class Registration(McpRegistration):
    """The rules are the service's (``McpRegistration``); the client is kept in the provider's state."""

    def now(self) -> float:
        return self._issuer().state.clock()

    def store_client(self, record: ClientRecord, request: Any) -> None:
        try:
            self._issuer().state.register_client(record)
        except RegistrationRefused as refused:
            raise RegistrationsCapped(str(refused), refused.retry_after) from None

    def _issuer(self) -> TokenIssuer:
        issuer: TokenIssuer = self.server.idp
        return issuer
