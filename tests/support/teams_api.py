"""Teams through the ``service`` fixture, for the teams API tests: create, invite, accept and the team
as a member reads it."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

from tests.support.aws import Reply, Service


def create_team(service: Service, owner: str = "alice", name: str = "销售部") -> str:
    reply = service.call("POST", "/teams", owner, body={"name": name})
    assert reply.status == HTTPStatus.CREATED, reply.body
    return str(reply.body["id"])


def invite(service: Service, team_id: str, identifier: str, by: str = "alice") -> Reply:
    return service.call("POST", f"/teams/{team_id}/members", by, body={"identifier": identifier})


def accept(service: Service, team_id: str, user: str) -> Reply:
    return service.call("POST", f"/teams/{team_id}/accept", user)


def join(service: Service, team_id: str, user: str, by: str = "alice") -> None:
    assert invite(service, team_id, user, by).status == HTTPStatus.CREATED
    assert accept(service, team_id, user).status == HTTPStatus.OK


def team(service: Service, team_id: str, user: str = "alice") -> Any:
    return service.call("GET", f"/teams/{team_id}", user).body


def error(reply: Reply) -> tuple[int, str]:
    return reply.status, reply.body["error"]["code"]
