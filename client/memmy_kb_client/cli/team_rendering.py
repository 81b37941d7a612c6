"""What the ``team`` commands print for people (``--json`` prints the API's JSON instead): the teams and
invitations, one team with its members and knowledge bases, in tables aligned in terminal columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memmy_kb_client.cli.terminal import one_line, table

if TYPE_CHECKING:
    from memmy_kb_client.team_replies import Team, TeamDetail, TeamPerson


def person(who: TeamPerson | None) -> str:
    if not who:
        return "someone"
    return f"{one_line(who.get('display_name', ''))} ({one_line(who.get('user_id', ''))})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun if n == 1 else noun + 's'}"


def _team_row(team: Team) -> list[str]:
    return [
        team["id"],
        team["role"],
        _count(team.get("member_count", 0), "member"),
        _count(team.get("kb_count", 0), "knowledge base"),
        team["name"],
    ]


def render_teams(teams: list[Team]) -> str:
    """The caller's teams (with their role), then their open invitations (with who invited them)."""
    joined = [t for t in teams if t.get("state") != "invited"]
    invited = [t for t in teams if t.get("state") == "invited"]
    rows = [_team_row(t) for t in joined]
    out = ["My teams:", *([f"  {line}" for line in table(rows)] or ["  (none)"])]
    if invited:
        out += [
            "Invitations (`memmy-kb team accept TEAM` to join):",
            *render_invitations(invited).splitlines(),
        ]
    return "\n".join(out)


def render_invitations(teams: list[Team]) -> str:
    if not teams:
        return "(no invitations)"
    rows = [
        [t["id"], t["name"], f"invited by {person(t.get('invited_by') or t.get('owner'))}"] for t in teams
    ]
    return "\n".join(f"  {line}" for line in table(rows))


def render_team(detail: TeamDetail) -> str:
    """One team: its name, id, owner and the caller's role; its members and invitations; its KBs."""
    lines = [
        f"Team '{one_line(detail['name'])}' ({detail['id']})",
        f"  owner: {person(detail.get('owner'))}",
        f"  you: {detail['role'] if detail.get('state') != 'invited' else 'invited'}",
    ]
    if detail.get("state") == "invited":
        lines.append(
            f"  invited by {person(detail.get('invited_by'))}: accept to see its members and knowledge bases"
        )
        return "\n".join(lines)
    members = detail.get("members") or []
    rows = [
        [m["user_id"], m["role"] if m.get("state") != "invited" else "invited", m["display_name"]]
        for m in members
    ]
    lines += [f"Members ({len(members)}):", *(f"  {line}" for line in table(rows))]
    kbs = detail.get("knowledge_bases") or []
    kb_rows = [[kb["id"], kb["name"], f"(from {person(kb.get('owner'))})"] for kb in kbs]
    lines += [f"Knowledge bases ({len(kbs)}):", *([f"  {line}" for line in table(kb_rows)] or ["  (none)"])]
    return "\n".join(lines)
