"""Teams over HTTP on the stage: a KB shared once with a team, and membership deciding who reads it.

A product manager makes a sales team and invites three colleagues: one by phone, one by email, one by
user id. Two accept; the third declines. The manager shares the product KB with the team: both members'
recalls find its excerpts, naming the KB, its sharer and the team; the one who declined finds nothing.
The manager removes one member: that member's very next recall has none. Then the manager shares a
second KB with the team: the removed member never sees it, the remaining member does, and a member
who joins only now reads both. Deleting the team ends everyone's access at once.
"""

from __future__ import annotations

import secrets
import uuid
from http import HTTPStatus
from typing import Any

import httpx
import pytest

from memmy_local.demo import COMPARISON, DEPLOYMENT_FAQ
from tests.support.e2e_story import (
    COMPARISON_FACT,
    DEPLOYMENT_FACT,
    FOLLOW_UP,
    QUESTION,
    client,
    recall,
    upload,
    wait_until_available,
)
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e

TEAM_NAME = "销售一组"


def _created(reply: httpx.Response) -> dict[str, Any]:
    assert reply.status_code == HTTPStatus.CREATED, reply.text
    body: dict[str, Any] = reply.json()
    return body


def _kb_with(api: httpx.Client, stage: Stage, name: str, filename: str, text: str) -> str:
    kb_id: str = _created(api.post("/knowledge-bases", json={"name": stage.kb_name(name)}))["id"]
    upload(api, kb_id, filename, text)
    wait_until_available(api, kb_id, {filename})
    return kb_id


def _team_excerpts(answer: dict[str, Any], fact: str) -> list[dict[str, Any]]:
    return [item for item in answer["items"] if fact in item["content"]]


def _reads_through_team(api: httpx.Client, query: str, fact: str) -> bool:
    answer = recall(api, query)
    found = _team_excerpts(answer, fact)
    if not found:
        return False
    for item in found:
        assert item["team"]["name"] == TEAM_NAME, item
    assert TEAM_NAME in answer["context"], answer["context"]
    return True


def test_a_team_reads_what_is_shared_with_it_and_a_removal_counts_at_the_next_query(stage: Stage) -> None:
    # Given a manager and four colleagues with verified phones or emails
    suffix = uuid.uuid4().hex[:8]
    phone_digits = f"139{secrets.randbelow(10**8):08d}"
    manager_user = stage.user(f"pm-{suffix}", name="产品经理")
    by_phone = stage.user(f"sales-a-{suffix}", name="销售小王", phone=f"+86{phone_digits}")
    by_email = stage.user(f"sales-b-{suffix}", name="销售小李", email=f"li-{suffix}@example.com")
    declines = stage.user(f"sales-c-{suffix}", name="销售小张")
    late = stage.user(f"sales-d-{suffix}", name="销售小赵")
    people = (manager_user, by_phone, by_email, declines, late)
    clients = [client(stage, person.token) for person in people]
    manager, wang, li, zhang, zhao = clients
    try:
        for api in clients:
            assert api.put("/me").status_code == HTTPStatus.OK

        # When the manager makes a team and invites three: by phone, by email, by user id
        team_id = _created(manager.post("/teams", json={"name": TEAM_NAME}))["id"]
        for identifier in (phone_digits, f"li-{suffix}@example.com", declines.user_id):
            invited = _created(manager.post(f"/teams/{team_id}/members", json={"identifier": identifier}))
            assert invited["state"] == "invited"

        # Then each invitee sees the invitation; two accept, one declines
        for api in (wang, li, zhang):
            mine = api.get("/teams").json()["items"]
            assert [(t["id"], t["state"]) for t in mine] == [(team_id, "invited")]
        for api in (wang, li):
            assert api.post(f"/teams/{team_id}/accept").status_code == HTTPStatus.OK
        assert zhang.post(f"/teams/{team_id}/decline", json={}).status_code == HTTPStatus.NO_CONTENT

        # When the manager shares the product KB with the team
        first_kb = _kb_with(manager, stage, "MemOS 产品资料", "MemOS 开源VS商业化.md", COMPARISON)
        _created(manager.post(f"/knowledge-bases/{first_kb}/teams", json={"team_id": team_id}))

        # Then both members find its excerpts naming the team; the one who declined finds nothing
        assert _reads_through_team(wang, QUESTION, COMPARISON_FACT)
        assert _reads_through_team(li, QUESTION, COMPARISON_FACT)
        assert recall(zhang, QUESTION)["scope_size"] == 0

        # When the manager removes one member, then their very next recall has none
        removed = manager.delete(f"/teams/{team_id}/members/{by_phone.user_id}")
        assert removed.status_code == HTTPStatus.NO_CONTENT, removed.text
        assert recall(wang, QUESTION) == {
            "items": [],
            "context": "",
            "scope_size": 0,
            "discarded": False,
            "partial": False,
        }

        # When the manager then shares a second KB with the team
        second_kb = _kb_with(manager, stage, "MemOS 部署", "MemOS 私有化部署FAQ.md", DEPLOYMENT_FAQ)
        _created(manager.post(f"/knowledge-bases/{second_kb}/teams", json={"team_id": team_id}))

        # Then the removed member never sees it, the remaining member does
        assert recall(wang, FOLLOW_UP)["scope_size"] == 0
        assert _reads_through_team(li, FOLLOW_UP, DEPLOYMENT_FACT)

        # And a member who joins only now reads both
        _created(manager.post(f"/teams/{team_id}/members", json={"identifier": late.user_id}))
        assert zhao.post(f"/teams/{team_id}/accept").status_code == HTTPStatus.OK
        assert _reads_through_team(zhao, QUESTION, COMPARISON_FACT)
        assert _reads_through_team(zhao, FOLLOW_UP, DEPLOYMENT_FACT)
        listed = {kb["id"]: kb for kb in zhao.get("/knowledge-bases").json()["items"]}
        assert {first_kb, second_kb} <= set(listed)
        assert [t["name"] for t in listed[first_kb]["teams"]] == [TEAM_NAME]

        # When the manager deletes the team, then nobody reads through it any more
        assert manager.delete(f"/teams/{team_id}").status_code == HTTPStatus.NO_CONTENT
        for api in (li, zhao):
            assert recall(api, QUESTION)["scope_size"] == 0
        # ...and the manager's own recall is untouched
        assert COMPARISON_FACT in recall(manager, QUESTION)["context"]
    finally:
        for api in clients:
            api.close()
