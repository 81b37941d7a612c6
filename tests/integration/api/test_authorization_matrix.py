"""Every route of template.yaml against every kind of caller, with the status each must get.

Routes are read from the template, so a new route fails ``test_every_route_has_expectations`` until its
row is added here. For callers who may not see the KB, the answer must be exactly the answer for a KB
that does not exist: no name, owner or existence leaks.
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import pytest

from memmy_local.template import http_routes, load_template
from tests.support import checkpoint, seed
from tests.support.events import claims_for

PRINCIPALS = ("owner", "reader", "stranger", "revoked", "anonymous")
USERS = {"owner": "alice", "reader": "bob", "stranger": "carol", "revoked": "dave", "anonymous": None}
KB_NAME = "机密路线图"
TEAM_NAME = "机密团队"
OK, CREATED, NO_CONTENT, ACCEPTED = (
    HTTPStatus.OK,
    HTTPStatus.CREATED,
    HTTPStatus.NO_CONTENT,
    HTTPStatus.ACCEPTED,
)
FORBIDDEN, NOT_FOUND, UNAUTHORIZED = HTTPStatus.FORBIDDEN, HTTPStatus.NOT_FOUND, HTTPStatus.UNAUTHORIZED
BAD_REQUEST = HTTPStatus.BAD_REQUEST


@dataclass(frozen=True)
class Row:
    body: Any
    owner: int
    reader: int
    stranger: int
    revoked: int
    kb_scoped: bool = True  # the path names a KB, so outsiders must get the not-exists answer
    team_scoped: bool = (
        False  # the path names a team: outsiders get the answer for a team that does not exist
    )
    # Only a route the template opens (``Auth: {Authorizer: NONE}``) answers a caller without a token.
    anonymous: int = UNAUTHORIZED


ROWS: dict[tuple[str, str], Row] = {
    # Public login settings, the same for everyone (no user data): the desktop reads them before it has a token.
    ("GET", "/login-configuration"): Row(None, OK, OK, OK, OK, kb_scoped=False, anonymous=OK),
    ("PUT", "/me"): Row(None, OK, OK, OK, OK, kb_scoped=False),
    ("GET", "/me"): Row(None, OK, OK, OK, OK, kb_scoped=False),
    ("PATCH", "/me"): Row({"recall_new_shares": False}, OK, OK, OK, OK, kb_scoped=False),
    # Blocks are the caller's own; blocking an id with no account is accepted too (no oracle).
    ("GET", "/me/blocked"): Row(None, OK, OK, OK, OK, kb_scoped=False),
    ("POST", "/me/blocked"): Row(
        {"user_id": "erin"}, NO_CONTENT, NO_CONTENT, NO_CONTENT, NO_CONTENT, kb_scoped=False
    ),
    ("DELETE", "/me/blocked/{user_id}"): Row(
        None, NO_CONTENT, NO_CONTENT, NO_CONTENT, NO_CONTENT, kb_scoped=False
    ),
    ("GET", "/knowledge-bases/{kb_id}/activity"): Row(None, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND),
    # Recall searches only the caller's own scope, so every signed-in caller may ask (an empty scope is 200).
    ("POST", "/recall"): Row({"query": "路线图"}, OK, OK, OK, OK, kb_scoped=False),
    ("GET", "/knowledge-bases"): Row(None, OK, OK, OK, OK, kb_scoped=False),
    ("POST", "/knowledge-bases"): Row({"name": "new"}, CREATED, CREATED, CREATED, CREATED, kb_scoped=False),
    ("GET", "/knowledge-bases/{kb_id}"): Row(None, OK, OK, NOT_FOUND, NOT_FOUND),
    ("PATCH", "/knowledge-bases/{kb_id}"): Row({"name": "renamed"}, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND),
    ("PUT", "/knowledge-bases/{kb_id}/recall"): Row({"enabled": False}, OK, OK, NOT_FOUND, NOT_FOUND),
    ("GET", "/knowledge-bases/{kb_id}/members"): Row(None, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND),
    ("POST", "/knowledge-bases/{kb_id}/members"): Row(
        {"identifier": "erin"}, CREATED, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    # The path's user is the reader: the owner revokes them, the reader leaves.
    ("DELETE", "/knowledge-bases/{kb_id}/members/{user_id}"): Row(
        None, NO_CONTENT, NO_CONTENT, NOT_FOUND, NOT_FOUND
    ),
    ("GET", "/knowledge-bases/{kb_id}/files"): Row(None, OK, OK, NOT_FOUND, NOT_FOUND),
    ("GET", "/knowledge-bases/{kb_id}/files/{file_id}"): Row(None, OK, OK, NOT_FOUND, NOT_FOUND),
    ("POST", "/knowledge-bases/{kb_id}/uploads"): Row(
        {"filename": "路线图.pdf", "size_bytes": 1024}, CREATED, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    # A failed upload leaves the listing; one gone already (as here) answers the same.
    ("DELETE", "/knowledge-bases/{kb_id}/uploads/{upload_id}"): Row(
        None, NO_CONTENT, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    ("PATCH", "/knowledge-bases/{kb_id}/files/{file_id}"): Row(
        {"folder_id": None}, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    # A file's next version: the owner's alone, as an upload is.
    ("POST", "/knowledge-bases/{kb_id}/files/{file_id}/replacements"): Row(
        {"size_bytes": 1024, "if_version": 1}, CREATED, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    ("POST", "/knowledge-bases/{kb_id}/folders"): Row(
        {"name": "新文件夹"}, CREATED, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    ("PATCH", "/knowledge-bases/{kb_id}/folders/{folder_id}"): Row(
        {"name": "改名"}, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    ("DELETE", "/knowledge-bases/{kb_id}"): Row(None, ACCEPTED, FORBIDDEN, NOT_FOUND, NOT_FOUND),
    ("DELETE", "/knowledge-bases/{kb_id}/files/{file_id}"): Row(
        None, ACCEPTED, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    ("DELETE", "/knowledge-bases/{kb_id}/folders/{folder_id}"): Row(
        None, ACCEPTED, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    # A KB shared with a team: the KB's owner shares (the world's KB is shared with its team already: 409)
    # and lists; a team member who reads it (bob) may neither, nor unshare a KB that is not his.
    ("GET", "/knowledge-bases/{kb_id}/teams"): Row(None, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND),
    ("POST", "/knowledge-bases/{kb_id}/teams"): Row(
        {"team_id": "{team_id}"}, HTTPStatus.CONFLICT, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    ("DELETE", "/knowledge-bases/{kb_id}/teams/{team_id}"): Row(
        None, NO_CONTENT, FORBIDDEN, NOT_FOUND, NOT_FOUND
    ),
    # Teams: "owner" owns the team, "reader" (bob) is a member, "revoked" (dave) was removed (docs/teams.md).
    ("GET", "/teams"): Row(None, OK, OK, OK, OK, kb_scoped=False),
    ("POST", "/teams"): Row({"name": "新团队"}, CREATED, CREATED, CREATED, CREATED, kb_scoped=False),
    ("GET", "/teams/{team_id}"): Row(None, OK, OK, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True),
    ("PATCH", "/teams/{team_id}"): Row(
        {"name": "改名"}, OK, FORBIDDEN, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    ("DELETE", "/teams/{team_id}"): Row(
        None, NO_CONTENT, FORBIDDEN, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    ("POST", "/teams/{team_id}/members"): Row(
        {"identifier": "erin"}, CREATED, FORBIDDEN, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    # The path's user is the member (bob): the owner changes his role; he may not.
    ("PATCH", "/teams/{team_id}/members/{user_id}"): Row(
        {"role": "admin"}, NO_CONTENT, FORBIDDEN, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    # The owner removes the member; the member leaves.
    ("DELETE", "/teams/{team_id}/members/{user_id}"): Row(
        None, NO_CONTENT, NO_CONTENT, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    # Only someone invited accepts or declines; a member is already in (409), anyone else gets no team.
    ("POST", "/teams/{team_id}/accept"): Row(
        None,
        HTTPStatus.CONFLICT,
        HTTPStatus.CONFLICT,
        NOT_FOUND,
        NOT_FOUND,
        kb_scoped=False,
        team_scoped=True,
    ),
    ("POST", "/teams/{team_id}/decline"): Row(
        {}, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    ("GET", "/teams/{team_id}/activity"): Row(
        None, OK, OK, NOT_FOUND, NOT_FOUND, kb_scoped=False, team_scoped=True
    ),
    # The caller's own connections to the remote MCP endpoint; an id that is not theirs is unknown.
    ("GET", "/me/connections"): Row(None, OK, OK, OK, OK, kb_scoped=False),
    ("DELETE", "/me/connections/{connection_id}"): Row(
        None, NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND, kb_scoped=False
    ),
    # The remote MCP endpoint checks its own MCP tokens (no authorizer): a desktop login is no token to it,
    # and its metadata is public (RFC 9728). tests/integration/mcp/ has its tokens' own cases.
    ("POST", "/mcp"): Row(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        UNAUTHORIZED,
        UNAUTHORIZED,
        UNAUTHORIZED,
        UNAUTHORIZED,
        kb_scoped=False,
    ),
    ("GET", "/mcp"): Row(
        None, *[HTTPStatus.METHOD_NOT_ALLOWED] * 4, kb_scoped=False, anonymous=HTTPStatus.METHOD_NOT_ALLOWED
    ),
    ("DELETE", "/mcp"): Row(
        None, *[HTTPStatus.METHOD_NOT_ALLOWED] * 4, kb_scoped=False, anonymous=HTTPStatus.METHOD_NOT_ALLOWED
    ),
    ("GET", "/.well-known/oauth-protected-resource/mcp"): Row(
        None, OK, OK, OK, OK, kb_scoped=False, anonymous=OK
    ),
    ("GET", "/.well-known/oauth-protected-resource"): Row(
        None, OK, OK, OK, OK, kb_scoped=False, anonymous=OK
    ),
    # The MCP clients' authorization server: public by design, and the same to everyone, a desktop login
    # included (it reads none). tests/integration/mcp_auth/ has the flow and its refusals.
    ("GET", "/.well-known/oauth-authorization-server"): Row(
        None, OK, OK, OK, OK, kb_scoped=False, anonymous=OK
    ),
    ("GET", "/oauth/jwks"): Row(None, OK, OK, OK, OK, kb_scoped=False, anonymous=OK),
    ("POST", "/oauth/register"): Row({}, *[BAD_REQUEST] * 4, kb_scoped=False, anonymous=BAD_REQUEST),
    ("GET", "/oauth/authorize"): Row(None, *[BAD_REQUEST] * 4, kb_scoped=False, anonymous=BAD_REQUEST),
    ("GET", "/oauth/callback"): Row(None, *[BAD_REQUEST] * 4, kb_scoped=False, anonymous=BAD_REQUEST),
    ("POST", "/oauth/consent"): Row(None, *[BAD_REQUEST] * 4, kb_scoped=False, anonymous=BAD_REQUEST),
    ("POST", "/oauth/token"): Row(None, *[BAD_REQUEST] * 4, kb_scoped=False, anonymous=BAD_REQUEST),
    ("POST", "/oauth/revoke"): Row(None, *[BAD_REQUEST] * 4, kb_scoped=False, anonymous=BAD_REQUEST),
}

ROUTES = sorted((r.method, r.path) for r in http_routes(load_template()))


def test_every_route_has_expectations():
    assert set(ROUTES) <= set(ROWS), f"add rows for {sorted(set(ROUTES) - set(ROWS))}"


def _world(service) -> dict[str, str]:
    for user in ("alice", "bob", "carol", "dave", "erin"):
        service.call("PUT", "/me", claims=claims_for(user, name=user.title()))
    kb_id = service.call("POST", "/knowledge-bases", "alice", body={"name": KB_NAME}).body["id"]
    for user in ("bob", "dave"):
        assert (
            service.call(
                "POST", f"/knowledge-bases/{kb_id}/members", "alice", body={"identifier": user}
            ).status
            == CREATED
        )
    assert service.call("DELETE", f"/knowledge-bases/{kb_id}/members/dave", "alice").status == NO_CONTENT
    folder = service.call("POST", f"/knowledge-bases/{kb_id}/folders", "alice", body={"name": "资料夹"})
    file_id = seed.add_file(service, kb_id, "alice", "路线图.md", "# 路线图\n机密".encode())
    team_id = service.call("POST", "/teams", "alice", body={"name": TEAM_NAME}).body["id"]
    for user in ("bob", "dave"):
        assert (
            service.call("POST", f"/teams/{team_id}/members", "alice", body={"identifier": user}).status
            == CREATED
        )
    assert service.call("POST", f"/teams/{team_id}/accept", "bob").status == OK
    assert service.call("DELETE", f"/teams/{team_id}/members/dave", "alice").status == NO_CONTENT
    shared = service.call("POST", f"/knowledge-bases/{kb_id}/teams", "alice", body={"team_id": team_id})
    assert shared.status == CREATED, shared.body
    ids = {
        "kb_id": kb_id,
        "folder_id": folder.body["id"],
        "file_id": file_id,
        "user_id": "bob",
        "team_id": team_id,
        "connection_id": "conn_00000000000000000000",
    }
    return {**ids, "upload_id": "up_000000000000000000000000"}


_BUILT: list[tuple[checkpoint.Checkpoint, dict[str, str]]] = []


@pytest.fixture
def world(service) -> dict[str, str]:
    """The world each case starts from: built through the API by the first case (in each worker), then
    put back from its checkpoint (tests/support/checkpoint.py): the module ran in 66 s instead of 218 s."""
    if not _BUILT:
        ids = _world(service)
        _BUILT.append((checkpoint.take(service), ids))
        return ids
    saved, ids = _BUILT[0]
    checkpoint.put_back(service, saved)
    return dict(ids)


def _path(template: str, ids: dict[str, str]) -> str:
    return template.format(**ids)


def _body(body: Any, ids: dict[str, str]) -> Any:
    """A row's body with the world's ids in its text values (``{"team_id": "{team_id}"}``)."""
    if not isinstance(body, dict):
        return body
    return {key: value.format(**ids) if isinstance(value, str) else value for key, value in body.items()}


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("route", ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_route_answers_each_principal_as_expected(service, world, route, principal):
    method, template = route
    row = ROWS[route]
    ids = world
    user = USERS[principal]
    reply = service.call(method, _path(template, ids), user, body=_body(row.body, ids))
    expected = getattr(row, principal)
    assert reply.status == expected, reply.body
    if user is not None and expected == NOT_FOUND and row.kb_scoped:
        absent_ids = {**ids, "kb_id": "kb_000000000000000000000000"}
        absent = service.call(method, _path(template, absent_ids), user, body=_body(row.body, absent_ids))
        assert (reply.status, reply.body) == (absent.status, absent.body)
        assert KB_NAME not in str(reply.body)
        assert "alice" not in str(reply.body).lower()
    if user is not None and expected == NOT_FOUND and row.team_scoped:
        absent = service.call(
            method,
            _path(template, {**ids, "team_id": "tm_000000000000000000000000"}),
            user,
            body=_body(row.body, ids),
        )
        assert (reply.status, reply.body) == (absent.status, absent.body)
        assert TEAM_NAME not in str(reply.body)
        assert "alice" not in str(reply.body).lower()
