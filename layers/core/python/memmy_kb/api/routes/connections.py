"""The caller's connections to the remote MCP endpoint: list them with their log, disconnect one."""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Path

from memmy_kb.api.injected import CallerId, ConnectionStoreDep
from memmy_kb.api.models.connections import ConnectionList
from memmy_kb.api.resolver import new_router, responses
from memmy_kb.domain.remote_mcp import connections

router = new_router()

ConnectionId = Annotated[str, Path(min_length=1, max_length=64)]


@router.get(
    "/me/connections",
    operation_id="listConnections",
    summary="The OAuth clients connected to the caller's remote MCP endpoint, and the connection log",
    responses=responses(HTTPStatus.OK, "The connections and the newest 50 log entries", ConnectionList),
)
def handle_list_connections(caller: CallerId, store: ConnectionStoreDep) -> ConnectionList:
    found, log = connections.list_connections(store, caller, int(time.time()))
    return ConnectionList.from_lists(found, log)


@router.delete(
    "/me/connections/<connection_id>",
    operation_id="revokeConnection",
    summary="Disconnect a client: its tokens are refused from its next call until the caller signs in and consents again",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Disconnected (also when it already was)",
        None,
        (HTTPStatus.NOT_FOUND, "No such connection of the caller (connection_not_found)"),
    ),
)
def handle_revoke_connection(  # type: ignore[no-untyped-def]
    connection_id: ConnectionId, caller: CallerId, store: ConnectionStoreDep
):
    connections.revoke_connection(store, caller, connection_id, int(time.time()))
    return Response(status_code=HTTPStatus.NO_CONTENT)
