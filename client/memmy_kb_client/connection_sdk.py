"""The SDK's methods for the person's connected MCP clients (docs/desktop.md, "Connected apps"), mixed into
``sdk.MemmyClient`` as ``team_sdk``'s are: one method per route, each returning its reply as the
``connection_replies`` type of the route's response schema; every non-2xx answer raises ``MemmyApiError``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

if TYPE_CHECKING:
    from memmy_kb_client.connection_replies import ConnectionList


class ConnectionMethods:
    """``GET /me/connections`` and ``DELETE /me/connections/{connection_id}``, on a client that sends
    requests with ``_request`` (``sdk.MemmyClient``)."""

    if TYPE_CHECKING:  # MemmyClient's own, declared for the type checker only (no stub at run time)

        def _request(
            self,
            method: str,
            path: str,
            *,
            json: Any = None,
            headers: dict[str, str] | None = None,
            params: dict[str, str] | None = None,
        ) -> dict[str, Any]: ...

    def list_connections(self) -> ConnectionList:
        """The MCP clients connected to one's knowledge bases (revoked ones too) and their recent activity."""
        return cast("ConnectionList", self._request("GET", "/me/connections"))

    def revoke_connection(self, connection_id: str) -> None:
        """Disconnect a client (204): its tokens are refused from now on, until the person signs in to it and
        consents again. One already revoked is fine; an unknown id is 404 ``connection_not_found``."""
        self._request("DELETE", f"/me/connections/{quote(connection_id, safe='')}")
