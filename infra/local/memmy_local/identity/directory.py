"""Which client a ``client_id`` names at the dev identity provider: the desktop (``memmy-desktop``), an
MCP client registered at ``/register``, or an MCP client whose ``client_id`` is the https URL of its
metadata document (fetched on first sight and again after ``metadata_documents.CACHE_SECONDS``)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
from authlib.oauth2.rfc6749 import InvalidClientError

from .clients import ClientMetadataProblem, McpClient
from .metadata_documents import CACHE_SECONDS, fetch_client_metadata, is_metadata_document_url
from .records import CLIENT_ID, PublicClient
from .state import IdentityState, RegistrationRefused


class ClientDirectory:
    """``query(client_id)``: Authlib's ``query_client``. ``http`` makes the client that fetches metadata
    documents (tests give one on ``httpx.MockTransport``)."""

    def __init__(self, state: IdentityState, http: Callable[[], httpx.Client]) -> None:
        self.state = state
        self.desktop = PublicClient()
        self._http = http

    def query(self, client_id: str | None) -> PublicClient | McpClient | None:
        if client_id == CLIENT_ID:
            return self.desktop
        if not client_id:
            return None
        record = self.state.client(client_id)
        if is_metadata_document_url(client_id):
            now = self.state.clock()
            if record is None or record.created_at + CACHE_SECONDS <= now:
                try:
                    record = fetch_client_metadata(client_id, self._http(), now=now)
                    self.state.remember_client(record)
                except (ClientMetadataProblem, RegistrationRefused) as problem:
                    raise InvalidClientError(
                        description=f"The client's metadata document cannot be used: {problem}"
                    ) from None
        return McpClient(record) if record is not None else None
