"""What teams cost: recall's table reads for a user in 0, 5 and 50 teams, and the writes of a removal and
of a team share for teams of 10 and 1,000 members.

The real handlers run in-process on moto and the MemOS emulator through the test suite's ``Service``, as
``bench.route_calls`` runs them, and every AWS call is recorded with its answer (``route_calls.recording``)
so DynamoDB's request units are estimated from what was sent and read (``bench.dynamodb_units``).

Recall: the caller reads 200 KBs of other owners. With 0 teams, each KB is shared with them directly
(the baseline); with 5 or 50 teams, the 200 KBs are spread evenly over teams the caller is a member of.
The design (docs/teams.md) says a recall reads the caller's partition once and, with any team, the
teams' META items in one batch, before and after the search: the request count must not grow with the
number of teams or of team KBs. A removal deletes one membership and a team share writes the team's
and the KB's META, whatever the team's size: their calls and units must be the same at 10 and 1,000.

``python -m bench.team_costs``
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench.route_calls import QUERY, Calls, in_process_stack, recording

SHARED_KBS = 200
OWNERS = 50
TEAM_COUNTS = (0, 5, 50)
TEAM_SIZES = (10, 1_000)
RECALLS = 15


@dataclass(frozen=True)
class RecallRow:
    teams: int
    kbs: int
    calls: str  # "4 (BatchGetItem 2, Query 2)"
    requests: float  # DynamoDB requests per recall
    rru: float  # read units per recall
    median_ms: float
    scope_size: int


@dataclass(frozen=True)
class WriteRow:
    what: str  # "removal", "team share"
    members: int
    calls: str
    requests: int
    wru: float


def _call(service: Any, method: str, path: str, user: str, expect: int, **kwargs: Any) -> Any:
    reply = service.call(method, path, user, **kwargs)
    if reply.status != expect:
        raise RuntimeError(f"{method} {path} as {user}: {reply.status} {reply.body}")
    return reply.body


def _people(service: Any, *users: str) -> None:
    from tests.support.events import claims_for

    for user in users:
        _call(service, "PUT", "/me", user, 200, claims=claims_for(user, name=user))


def _kb(service: Any, owner: str, name: str) -> str:
    kb_id: str = _call(service, "POST", "/knowledge-bases", owner, 201, body={"name": name})["id"]
    return kb_id


def _team(service: Any, owner: str, name: str) -> str:
    team_id: str = _call(service, "POST", "/teams", owner, 201, body={"name": name})["id"]
    return team_id


def _join(service: Any, team_id: str, admin: str, user: str) -> None:
    _call(service, "POST", f"/teams/{team_id}/members", admin, 201, body={"identifier": user})
    _call(service, "POST", f"/teams/{team_id}/accept", user, 200)


def _seed_kbs(service: Any) -> list[tuple[str, str]]:
    """200 KBs of 50 owners (KB n is owner n % 50's), the first five with a document: (KB id, owner)."""
    from tests.support import seed

    owners = [f"owner-{n}" for n in range(OWNERS)]
    _people(service, *owners)
    kbs = []
    for n in range(SHARED_KBS):
        owner = owners[n % OWNERS]
        kb_id = _kb(service, owner, f"资料 {n}")
        if n < 5:  # a few KBs with a document, so the recall has excerpts to attribute
            seed.add_file(service, kb_id, owner, "手册.md", QUERY.encode() + "：开源版免费自部署。".encode())
        kbs.append((kb_id, owner))
    return kbs


def _seed_recall(service: Any, kbs: list[tuple[str, str]], caller: str, teams: int) -> None:
    """The 200 KBs readable by ``caller``: shared directly (0 teams) or spread over ``teams`` teams, each team
    owned by one of the KBs' owners and joined by the others whose KBs it lists, and by the caller."""
    if not teams:
        for kb_id, owner in kbs:
            _call(
                service, "POST", f"/knowledge-bases/{kb_id}/members", owner, 201, body={"identifier": caller}
            )
        return
    team_ids = [_team(service, f"owner-{j}", f"团队 {teams}-{j}") for j in range(teams)]
    for n in range(teams, OWNERS):
        _join(service, team_ids[n % teams], f"owner-{n % teams}", f"owner-{n}")
    for j, team_id in enumerate(team_ids):
        _join(service, team_id, f"owner-{j}", caller)
    for n, (kb_id, owner) in enumerate(kbs):
        team_id = team_ids[(n % OWNERS) % teams]
        _call(service, "POST", f"/knowledge-bases/{kb_id}/teams", owner, 201, body={"team_id": team_id})


def _recall_row(service: Any, take: Callable[[], Calls], caller: str, teams: int) -> RecallRow:
    for _ in range(3):  # warm: clients, the MemOS key, the fingerprint cache
        _call(service, "POST", "/recall", caller, 200, body={"query": QUERY})
    take()
    timings, scope = [], 0
    for _ in range(RECALLS):
        started = time.perf_counter()
        scope = _call(service, "POST", "/recall", caller, 200, body={"query": QUERY})["scope_size"]
        timings.append(time.perf_counter() - started)
    calls = take()
    requests = calls.count("dynamodb") / RECALLS
    ops = {op: n / RECALLS for (s, op), n in sorted(calls.operations.items()) if s == "dynamodb"}
    described = f"{requests:.2g} ({', '.join(f'{op} {n:.2g}' for op, n in ops.items())})"
    return RecallRow(
        teams, SHARED_KBS, described, requests, calls.rru / RECALLS, statistics.median(timings) * 1000, scope
    )


def _seed_members(service: Any, team_id: str, count: int, tag: str) -> list[str]:
    """``count`` members written straight into the table (as accepting writes them), the team's count with them."""
    from memmy_kb.adapters.dynamodb.keys import membership_key, team_key
    from memmy_kb.adapters.dynamodb.table import dump
    from memmy_kb.composition import dynamodb_client
    from memmy_kb.records import MembershipRecord

    client, table = dynamodb_client(), service.refs["Table"]
    now = datetime.now(UTC)
    users = [f"member-{tag}-{n:04d}" for n in range(count)]
    items = []
    for user in users:
        record = MembershipRecord(
            user_id=user, team_id=team_id, state="member", joined_at=now, invited_at=now
        )
        key = membership_key(user, team_id)
        extra = {"GSI1PK": f"TEAM#{team_id}", "GSI1SK": f"USER#{user}", "type": "membership"}
        items.append(dump({**key, **extra, **record.model_dump(mode="json")}))
    for start in range(0, len(items), 25):
        request = {table: [{"PutRequest": {"Item": item}} for item in items[start : start + 25]]}
        while request:
            request = client.batch_write_item(RequestItems=request).get("UnprocessedItems") or {}
    client.update_item(
        TableName=table,
        Key=dump(team_key(team_id)),
        UpdateExpression="ADD member_count :n",
        ExpressionAttributeValues={":n": {"N": str(count)}},
    )
    return users


def _write_rows(service: Any, take: Callable[[], Calls], members: int) -> list[WriteRow]:
    tag = f"w{members}"
    owner = f"team-owner-{tag}"
    _people(service, owner)
    team_id = _team(service, owner, f"大团队 {tag}")
    users = _seed_members(service, team_id, members - 1, tag)
    kb_id = _kb(service, owner, f"资料 {tag}")
    rows = []
    take()
    _call(service, "POST", f"/knowledge-bases/{kb_id}/teams", owner, 201, body={"team_id": team_id})
    rows.append(_write_row("team share", members, take()))
    _call(service, "DELETE", f"/teams/{team_id}/members/{users[0]}", owner, 204)
    rows.append(_write_row("removal", members, take()))
    return rows


def _write_row(what: str, members: int, calls: Calls) -> WriteRow:
    return WriteRow(what, members, calls.describe("dynamodb"), calls.count("dynamodb"), calls.wru)


def run(verbose: bool = True) -> tuple[list[RecallRow], list[WriteRow]]:
    recalls: list[RecallRow] = []
    writes: list[WriteRow] = []
    # A bench owner shares 200 KBs in a few seconds: far past a person's limits (docs/limits.md).
    lifted = {
        "SHARE_ATTEMPT_LIMIT": "100000",
        "NEW_MEMBERS_PER_DAY": "100000",
        "MAX_KBS_PER_USER": "100000",
        "MEMOS_MAX_KBS": "1000",
    }
    with in_process_stack(lifted) as (service, _), recording() as take:
        kbs = _seed_kbs(service)
        for teams in TEAM_COUNTS:
            caller = f"caller-t{teams}"
            _people(service, caller)
            _seed_recall(service, kbs, caller, teams)
            recalls.append(_recall_row(service, take, caller, teams))
        for members in TEAM_SIZES:
            writes += _write_rows(service, take, members)
    if verbose:
        for r in recalls:
            print(
                f"recall, {r.kbs} shared KBs through {r.teams} teams: DynamoDB {r.calls} ≈ {r.rru:.1f} RRU per recall, "
                f"median {r.median_ms:.1f} ms, scope {r.scope_size}"
            )
        for w in writes:
            print(f"{w.what}, team of {w.members:,}: DynamoDB {w.calls} ≈ {w.wru:g} WRU")
    return recalls, writes


def rows(results: tuple[list[RecallRow], list[WriteRow]]) -> list[tuple[str, str, str]]:
    """``make bench``'s rows: recall per number of teams, then each write per team size."""
    recalls, writes = results
    base = recalls[0]
    out = [
        (
            "teams: recall's reads",
            f"{r.kbs} KBs through {r.teams} teams" if r.teams else f"{r.kbs} KBs shared directly",
            f"DynamoDB {r.calls} ≈ {r.rru:.0f} RRU per recall; median {r.median_ms:.0f} ms "
            f"({r.median_ms / base.median_ms:.2f}x the direct shares')",
        )
        for r in recalls
    ]
    out += [
        ("teams: writes", f"{w.what}, team of {w.members:,}", f"DynamoDB {w.calls} ≈ {w.wru:g} WRU")
        for w in writes
    ]
    return out


if __name__ == "__main__":
    run()
    sys.exit(0)
