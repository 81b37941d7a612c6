"""RFC 8707 resource indicators at the dev identity provider, and RFC 9207's ``iss`` on its redirects.

An MCP client's grant is for one resource, the local stack's MCP endpoint (``http://127.0.0.1:<api
port>/mcp``): an authorization request naming no resource means it, one naming another (or several) is
``invalid_target``; the code and the refresh tokens keep it, and a token request may repeat it but name no
other. The desktop names no resource, and its tokens keep their audience ``memmy-kb``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from authlib.oauth2.rfc9207 import IssuerParameter

from memmy_kb.api.mcp_auth.clients import InvalidTargetError, McpClient
from memmy_kb.api.mcp_auth.clients import check_token_resource as check_token_resource


def authorization_resource(client: Any, requested: Sequence[str], mcp_resource: str | None) -> str | None:
    """The resource an authorization request of ``client`` is for (None for the desktop's), or
    ``InvalidTargetError``."""
    if not isinstance(client, McpClient):
        if requested:
            raise InvalidTargetError("This client's tokens are for Memmy's API only: send no 'resource'.")
        return None
    if mcp_resource is None:
        raise InvalidTargetError("This provider serves no MCP resource.")
    if len(requested) > 1 or (requested and requested[0] != mcp_resource):
        raise InvalidTargetError(f"The one resource an MCP client may ask for is {mcp_resource}.")
    return mcp_resource


class Issuer(IssuerParameter):  # type: ignore[misc]
    """RFC 9207: ``iss`` on every authorization response of the server it is registered with."""

    def __init__(self, issuer: Callable[[], str]) -> None:
        self.issuer = issuer  # read at each response: the provider knows its issuer once it listens

    def get_issuer(self) -> str:
        return self.issuer()
