"""Which client a ``client_id`` names at the dev identity provider: the desktop (``memmy-desktop``), the
service's authorization server signing people in (``memmy-mcp-auth``), an MCP client registered at
``/register``, or an MCP client whose ``client_id`` is the https URL of its metadata document (fetched
with the service's adapter on first sight and again after ``CACHE_SECONDS``)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from authlib.oauth2.rfc6749 import InvalidClientError

from memmy_kb.adapters.client_metadata import HttpClientMetadata
from memmy_kb.api.mcp_auth.clients import McpClient
from memmy_kb.domain.mcp_auth.clients import ClientMetadataProblem, ClientRecord
from memmy_kb.domain.mcp_auth.metadata_documents import (
    CACHE_SECONDS,
    checked_document_url,
    is_metadata_document_url,
    parse_client_metadata,
)

from .records import CLIENT_ID, MCP_AUTH_CLIENT_ID, PublicClient
from .state import IdentityState, RegistrationRefused


class ClientDirectory:
    """``query(client_id)``: Authlib's ``query_client``. ``http`` makes the client that fetches metadata
    documents (tests give one on ``httpx.MockTransport``)."""

    def __init__(self, state: IdentityState, http: Callable[[], httpx.Client]) -> None:
        self.state = state
        self.desktop = PublicClient()
        self.mcp_auth = PublicClient(MCP_AUTH_CLIENT_ID)
        self._http = http

    def query(self, client_id: str | None) -> PublicClient | McpClient | None:
        if client_id == CLIENT_ID:
            return self.desktop
        if client_id == MCP_AUTH_CLIENT_ID:
            return self.mcp_auth
        if not client_id:
            return None
        record = self.state.client(client_id)
        if is_metadata_document_url(client_id):
            now = self.state.clock()
            if record is None or record.created_at + CACHE_SECONDS <= now:
                try:
                    record = self._fetch(client_id, now)
                    self.state.remember_client(record)
                except (ClientMetadataProblem, RegistrationRefused) as problem:
                    raise InvalidClientError(
                        description=f"The client's metadata document cannot be used: {problem}"
                    ) from None
        return McpClient(record) if record is not None else None

    def _fetch(self, url: str, now: float) -> ClientRecord:
        # The developer's own machine: no host is refused (the service's fetcher refuses private ones).
        fetcher = HttpClientMetadata(self._http(), check_hosts=False)
        return parse_client_metadata(url, fetcher.fetch(checked_document_url(url)), now=now)
