"""``memmy-kb team ...`` and ``kb share|revoke KB --team TEAM`` against a fake cloud that keeps the teams
(docs/teams.md, "Routes"): what each sends, what it prints and with ``--json``, a team or person taken by
id or unique name, an ambiguous or unknown name refused in words with nothing sent, and the service's
refusals as exit 1 with its sentence and code."""

from __future__ import annotations

import base64
import io
import json
import sys
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.cli import commands, team_commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli.rendering import render_list
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

ME = "u_me"
_claims = base64.urlsafe_b64encode(json.dumps({"sub": ME}).encode()).decode().rstrip("=")
TOKEN = f"e30.{_claims}.sig"  # the client reads its own sub without verifying
AT = "2026-12-07T10:00:00Z"


def person(user_id: str, name: str) -> dict[str, str]:
    return {"user_id": user_id, "display_name": name}


def member(user_id: str, name: str, role: str = "member", state: str = "member") -> dict[str, Any]:
    return {**person(user_id, name), "role": role, "state": state, "invited_at": AT, "joined_at": None}


def team(team_id: str, name: str, role: str = "owner", state: str = "member", **extra: Any) -> dict[str, Any]:
    return {
        "id": team_id,
        "name": name,
        "owner": person(ME, "我") if role == "owner" else person("u_boss", "老板"),
        "role": role,
        "state": state,
        "invited_by": None if state == "member" else person("u_boss", "老板"),
        "member_count": 3,
        "invited_count": 1,
        "kb_count": 1,
        "created_at": AT,
        **extra,
    }


def _error(status: int, code: str, message: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"code": code, "message": message}})


class FakeCloud:
    """The team routes and the KB routes the commands use, answered from ``teams`` and ``members``."""

    def __init__(self) -> None:
        self.teams = {
            "tm_1": team("tm_1", "研发部"),
            "tm_2": team("tm_2", "销售部", role="admin"),
            "tm_3": team("tm_3", "销售部", role="member"),
            "tm_4": team("tm_4", "研发部", role="member", state="invited"),
            "tm_5": team("tm_5", "设计组", role="member", state="invited"),
        }
        self.members = [
            member(ME, "我", "owner"),
            member("u_li", "李雷", "admin"),
            member("u_han", "韩梅梅"),
            member("u_wang", "王芳"),
            member("u_wang2", "王芳"),
            member("u_new", "新人", state="invited"),
        ]
        self.kbs = [
            {
                "id": "kb_1",
                "name": "产品资料",
                "role": "owner",
                "recall": True,
                "owner": {**person(ME, "我")},
            },
            {
                "id": "kb_2",
                "name": "客户案例",
                "role": "reader",
                "recall": True,
                "owner": {**person("u_li", "李雷"), "contact": "l***@example.com"},
                "teams": [{"id": "tm_1", "name": "研发部"}],
            },
        ]
        self.sent: list[tuple[str, str, Any]] = []
        self.listing_down = False

    def actions(self) -> list[tuple[str, str, Any]]:
        """What was asked that changes something (the lookups aside)."""
        return [s for s in self.sent if s[0] != "GET"]

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = unquote(request.url.raw_path.decode())
        body = json.loads(request.content) if request.content else None
        self.sent.append((request.method, path, body))
        return self._answer(request.method, path.split("/")[1:], body)

    def _answer(self, method: str, parts: list[str], body: Any) -> httpx.Response:
        match method, parts:
            case "GET", ["teams"] if self.listing_down:
                return _error(503, "unavailable", "Try again shortly.")
            case "GET", ["teams"]:
                return httpx.Response(200, json={"items": list(self.teams.values())})
            case "POST", ["teams"]:
                return httpx.Response(201, json=team("tm_9", body["name"]))
            case _, ["teams", team_id, *_] if team_id not in self.teams:
                return _error(404, "team_not_found", "No such team.")
            case "GET", ["teams", team_id]:
                return httpx.Response(200, json=self._detail(team_id))
            case "PATCH", ["teams", team_id]:
                return httpx.Response(200, json={**self.teams[team_id], "name": body["name"]})
            case "DELETE", ["teams", _]:
                return httpx.Response(204)
            case "POST", ["teams", _, "members"]:
                if body["identifier"] == "nobody@example.com":
                    return _error(404, "account_not_found", "No account has that identifier.")
                return httpx.Response(201, json=member("u_zhao", "赵六", state="invited"))
            case "PATCH", ["teams", _, "members", user_id]:
                return httpx.Response(200, json=member(user_id, "李雷", body["role"]))
            case "DELETE", ["teams", team_id, "members", user_id]:
                if user_id == ME and self.teams[team_id]["role"] == "owner":
                    return _error(
                        422, "owner_cannot_leave", "The owner cannot leave: transfer or delete the team."
                    )
                return httpx.Response(204)
            case "POST", ["teams", team_id, "accept"]:
                return httpx.Response(200, json=member(ME, "我"))
            case "POST", ["teams", _, "decline"]:
                return httpx.Response(204)
        return self._kb_answer(method, parts, body)

    def _detail(self, team_id: str) -> dict[str, Any]:
        """``GET /teams/{id}``: an invited caller sees the team's fields with both lists empty."""
        if self.teams[team_id]["state"] == "invited":
            return {**self.teams[team_id], "members": [], "knowledge_bases": []}
        shared = [{"id": "kb_1", "name": "产品资料", "owner": person(ME, "我"), "shared_at": AT}]
        return {**self.teams[team_id], "members": self.members, "knowledge_bases": shared}

    def _kb_answer(self, method: str, parts: list[str], body: Any) -> httpx.Response:
        match method, parts:
            case "PUT", ["me"]:
                return httpx.Response(200, json=person(ME, "我"))
            case "GET", ["knowledge-bases"]:
                return httpx.Response(200, json={"items": self.kbs})
            case "GET", ["knowledge-bases", kb_id]:
                return httpx.Response(200, json=next(kb for kb in self.kbs if kb["id"] == kb_id))
            case "POST", ["knowledge-bases", _, "teams"]:
                shared = {
                    "team_id": body["team_id"],
                    "name": "研发部",
                    "shared_by": person(ME, "我"),
                    "shared_at": AT,
                }
                return httpx.Response(201, json=shared)
            case "DELETE", ["knowledge-bases", _, "teams", _]:
                return httpx.Response(204)
            case "POST", ["knowledge-bases", _, "members"]:
                return httpx.Response(
                    201, json={**person("u_zhao", "赵六"), "role": "reader", "shared_at": AT}
                )
            case "GET", ["knowledge-bases", _, "members"]:
                return httpx.Response(200, json={"items": [{**person("u_zhao", "赵六"), "role": "reader"}]})
            case "DELETE", ["knowledge-bases", _, "members", _]:
                return httpx.Response(204)
        return _error(404, "route_not_found", "No such route.")

    def client(self) -> MemmyClient:
        config = ClientConfig(endpoint="http://memmy.test", token=TOKEN)
        return MemmyClient(config, http=mock_http(self.handle, "http://memmy.test"))


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> FakeCloud:
    fake = FakeCloud()
    monkeypatch.setattr(commands, "_client", lambda args: fake.client())
    return fake


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_create_sends_the_name_and_says_who_owns_it(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "team", "create", "市场部") == (0, "created team '市场部' (tm_9): you own it\n", "")
    assert cloud.actions() == [("POST", "/teams", {"name": "市场部"})]


def test_ls_lines_up_the_teams_then_the_invitations(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "team", "ls")
    assert code == 0
    assert out.splitlines() == [
        "My teams:",
        "  tm_1  owner   3 members  1 knowledge base  研发部",
        "  tm_2  admin   3 members  1 knowledge base  销售部",
        "  tm_3  member  3 members  1 knowledge base  销售部",
        "Invitations (`memmy-kb team accept TEAM` to join):",
        "  tm_4  研发部  invited by 老板 (u_boss)",
        "  tm_5  设计组  invited by 老板 (u_boss)",
    ]


def test_show_takes_a_unique_name_and_lists_members_and_knowledge_bases(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "team", "show", "研发部")  # tm_4 has the name too, but is an invitation
    assert code == 0
    assert ("GET", "/teams/tm_1", None) in cloud.sent
    lines = out.splitlines()
    assert lines[:4] == ["Team '研发部' (tm_1)", "  owner: 我 (u_me)", "  you: owner", "Members (6):"]
    assert "  u_li     admin    李雷" in lines
    assert "  u_new    invited  新人" in lines
    assert lines[-2:] == ["Knowledge bases (1):", "  kb_1  产品资料  (from 我 (u_me))"]


def test_show_of_an_invitation_says_who_invited_and_how_to_see_more(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "team", "show", "tm_5")
    assert code == 0
    assert out.splitlines() == [
        "Team '设计组' (tm_5)",
        "  owner: 老板 (u_boss)",
        "  you: invited",
        "  invited by 老板 (u_boss): accept to see its members and knowledge bases",
    ]


def test_an_ambiguous_team_name_lists_the_ids_and_sends_nothing(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "team", "rename", "销售部", "新名")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "error: 2 of your teams are named '销售部': give the id of the team you mean:",
        "  tm_2  销售部",
        "  tm_3  销售部",
    ]
    assert cloud.actions() == []


def test_an_unknown_team_says_how_to_list_them(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "team", "show", "不存在")
    assert code == 1
    assert err.startswith("error: none of your teams has the id or name '不存在'")
    assert "`memmy-kb team ls` lists them" in err


def test_a_team_not_listed_is_sent_as_an_id_and_the_services_404_is_exit_1(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.listing_down = True  # the name cannot be looked up now: the argument goes as an id
    code, out, err = run(capsys, "team", "add", "tm_gone", "a@example.com")
    assert (code, out) == (1, "")
    assert err == "error: No such team. (404 team_not_found)\n"
    assert cloud.actions() == [("POST", "/teams/tm_gone/members", {"identifier": "a@example.com"})]


def test_add_invites_by_identifier(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "team", "add", "研发部", "zhao@example.com")
    assert (code, out) == (0, "invited '赵六' (u_zhao) to team '研发部': they join when they accept\n")
    assert cloud.actions() == [("POST", "/teams/tm_1/members", {"identifier": "zhao@example.com"})]


def test_an_unknown_invitee_is_the_services_sentence_and_exit_1(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "team", "add", "tm_1", "nobody@example.com")
    assert (code, out) == (1, "")
    assert err == "error: No account has that identifier. (404 account_not_found)\n"


def test_rm_takes_a_member_by_name_or_cancels_an_invitation(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "team", "rm", "tm_1", "韩梅梅")[1] == "removed '韩梅梅' (u_han) from team '研发部'\n"
    assert (
        run(capsys, "team", "rm", "tm_1", "u_new")[1]
        == "cancelled the invitation of '新人' (u_new) to team '研发部'\n"
    )
    assert cloud.actions() == [
        ("DELETE", "/teams/tm_1/members/u_han", None),
        ("DELETE", "/teams/tm_1/members/u_new", None),
    ]


def test_an_ambiguous_person_lists_their_user_ids(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "team", "role", "tm_1", "王芳", "admin")
    assert code == 1
    assert err.splitlines() == [
        "error: 2 people in team '研发部' are named '王芳': give the user id of the person you mean:",
        "  u_wang   王芳",
        "  u_wang2  王芳",
    ]
    assert cloud.actions() == []
    code, _, err = run(capsys, "team", "rm", "tm_1", "nobody")
    assert code == 1
    assert "nobody in team '研发部' has the user id or name 'nobody'" in err


@pytest.mark.parametrize(
    ("role", "said"),
    [
        ("admin", "'李雷' (u_li) is now an admin of team '研发部'\n"),
        ("member", "'李雷' (u_li) is now a member of team '研发部'\n"),
        ("owner", "'李雷' (u_li) now owns team '研发部'; you are an admin of it\n"),
    ],
)
def test_role_sends_the_role(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], role: str, said: str
) -> None:
    assert run(capsys, "team", "role", "研发部", "李雷", role) == (0, said, "")
    assert cloud.actions() == [("PATCH", "/teams/tm_1/members/u_li", {"role": role})]


def test_invites_lists_only_the_invitations(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "team", "invites", "--json")
    assert code == 0
    assert [t["id"] for t in json.loads(out)["items"]] == ["tm_4", "tm_5"]


def test_accept_takes_the_name_among_the_invitations(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "team", "accept", "研发部")  # tm_1 has the name too, but is a team of mine
    assert (code, out) == (0, "joined team '研发部': its knowledge bases are yours to read\n")
    assert cloud.actions() == [("POST", "/teams/tm_4/accept", None)]


@pytest.mark.parametrize(
    ("extra", "block", "said"),
    [
        ([], None, "declined the invitation to team '设计组'\n"),
        (["--block", "team"], "team", "declined the invitation to team '设计组'; blocked the team\n"),
        (["--block", "owner"], "owner", "declined the invitation to team '设计组'; blocked its owner\n"),
    ],
)
def test_decline_sends_the_block(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], extra: list[str], block: str | None, said: str
) -> None:
    assert run(capsys, "team", "decline", "设计组", *extra) == (0, said, "")
    assert cloud.actions() == [("POST", "/teams/tm_5/decline", {"block": block})]


def test_decline_takes_only_team_or_owner_to_block(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["team", "decline", "设计组", "--block", "everyone"])
    assert exited.value.code == 2
    assert cloud.sent == []


def test_leave_removes_oneself_and_the_owner_is_told_why_not(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "team", "leave", "tm_3") == (0, "left team '销售部'\n", "")
    assert cloud.actions()[-1] == ("DELETE", f"/teams/tm_3/members/{ME}", None)  # its id: the profile's
    code, _, err = run(capsys, "team", "leave", "tm_1")
    assert code == 1
    assert err == "error: The owner cannot leave: transfer or delete the team. (422 owner_cannot_leave)\n"


def test_rename_says_old_and_new(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        run(capsys, "team", "rename", "研发部", "平台部")[1] == "renamed team '研发部' to '平台部' (tm_1)\n"
    )
    assert cloud.actions() == [("PATCH", "/teams/tm_1", {"name": "平台部"})]


def test_delete_needs_yes_without_a_terminal(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "team", "delete", "tm_1")
    assert code == 1
    assert "add --yes" in err
    assert cloud.sent == []
    assert run(capsys, "team", "delete", "研发部", "--yes") == (0, "deleted team '研发部'\n", "")
    assert cloud.actions() == [("DELETE", "/teams/tm_1", None)]


def test_share_and_revoke_with_a_team(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "kb", "share", "产品资料", "--team", "研发部")
    assert (code, out) == (0, "shared knowledge base '产品资料' with team '研发部': its members read it\n")
    # An admin of the team unshares a KB they read through it, named by its name.
    code, out, _ = run(capsys, "kb", "revoke", "客户案例", "--team", "tm_1")
    assert (code, out) == (0, "unshared knowledge base '客户案例' from team '研发部'\n")
    assert cloud.actions() == [
        ("POST", "/knowledge-bases/kb_1/teams", {"team_id": "tm_1"}),
        ("DELETE", "/knowledge-bases/kb_2/teams/tm_1", None),
    ]


def test_share_and_revoke_with_a_person_as_before(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "kb", "share", "产品资料", "zhao@example.com")[1] == "shared with 赵六 (u_zhao)\n"
    assert run(capsys, "kb", "unshare", "kb_1", "u_zhao")[1] == "revoked '赵六' (u_zhao)\n"
    assert cloud.actions() == [
        ("POST", "/knowledge-bases/kb_1/members", {"identifier": "zhao@example.com"}),
        ("DELETE", "/knowledge-bases/kb_1/members/u_zhao", None),
    ]


@pytest.mark.parametrize(
    "argv", [["kb", "share", "kb_1"], ["kb", "revoke", "kb_1", "u_zhao", "--team", "tm_1"]]
)
def test_a_person_and_a_team_or_neither_is_a_usage_error(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "takes a person (user id, phone or email) or --team TEAM, one of them" in err
    assert cloud.actions() == []


def test_sharing_a_kb_of_someone_else_with_a_team_is_refused_by_name(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "kb", "share", "客户案例", "--team", "tm_1")
    assert code == 1
    assert "no knowledge base of your own with the id or name '客户案例'" in err
    assert cloud.actions() == []


@pytest.mark.parametrize(
    ("argv", "key"),
    [
        (["team", "create", "市场部"], "id"),
        (["team", "ls"], "id"),
        (["team", "show", "tm_1"], "members"),
        (["team", "add", "tm_1", "z@example.com"], "user_id"),
        (["team", "rm", "tm_1", "u_han"], "removed"),
        (["team", "accept", "tm_4"], "user_id"),
        (["team", "decline", "tm_4"], "declined"),
        (["team", "leave", "tm_2"], "left"),
        (["team", "rename", "tm_1", "新名"], "name"),
        (["team", "delete", "tm_1", "--yes"], "deleted"),
        (["team", "role", "tm_1", "u_li", "admin"], "role"),
        (["kb", "share", "kb_1", "--team", "tm_1"], "team_id"),
        (["kb", "revoke", "kb_1", "--team", "tm_1"], "revoked"),
    ],
)
def test_json_prints_the_answer(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], argv: list[str], key: str
) -> None:
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    answer = json.loads(out)
    assert key in (answer[0] if isinstance(answer, list) else answer)


def test_kb_ls_names_the_team_a_kb_is_read_through(cloud: FakeCloud) -> None:
    rendered = render_list(cloud.kbs)  # type: ignore[arg-type]
    assert (
        rendered.splitlines()[-1]
        == "  kb_2  recall on  客户案例  (from 李雷, l***@example.com; team '研发部')"
    )
    two = [{**cloud.kbs[1], "teams": [{"id": "tm_1", "name": "研发部"}, {"id": "tm_2", "name": "销\n售部"}]}]
    assert render_list(two).endswith("; teams '研发部', '销\\u000a售部')")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "code", "sent"), [("n\n", 1, []), ("yes\n", 0, [("DELETE", "/teams/tm_1", None)])]
)
def test_delete_on_a_terminal_asks_by_name_first(
    cloud: FakeCloud,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    answer: str,
    code: int,
    sent: list[tuple[str, str, Any]],
) -> None:
    monkeypatch.setattr(team_commands, "stdin_is_terminal", lambda: True)
    monkeypatch.setattr(sys, "stdin", io.StringIO(answer))
    assert cli.main(["team", "delete", "研发部"]) == code
    assert "Delete team '研发部'?" in capsys.readouterr().err
    assert cloud.actions() == sent
