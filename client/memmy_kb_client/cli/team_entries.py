"""A team named on the command line by its id or by its name when no other of the caller's teams has it,
and a person of a team by their user id or by their display name when no other has it: what the ``team``
commands act on. An unknown name, or one several share, is refused in words with the candidates' ids; the
command never guesses (as ``entries`` does for knowledge bases and files)."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb_client.cli.entries import MAX_CANDIDATES, NotResolved
from memmy_kb_client.cli.terminal import one_line, table

if TYPE_CHECKING:
    from memmy_kb_client.sdk import MemmyClient
    from memmy_kb_client.team_replies import Team, TeamDetail, TeamMember

# Which of the caller's teams a name may name: those they belong to, or the open invitations.
MEMBER, INVITED = "member", "invited"
TEAM_HELP = {
    MEMBER: "the team: its id, or its name if no other team of yours has it",
    INVITED: "the team you are invited to: its id, or its name if no other invitation has it",
}


@dataclass(frozen=True)
class NamedTeam:
    """A team as a command names it: its id, and its name when the service said it (None: the id as given)."""

    id: str
    name: str | None = None

    @property
    def label(self) -> str:
        return f"team '{one_line(self.name)}'" if self.name is not None else f"team {self.id}"


def _same(a: str, b: str) -> bool:
    return unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)


def team_named(client: MemmyClient, given: str, state: str = MEMBER) -> NamedTeam:
    """The team ``given`` names among the caller's (``GET /teams``): the one with that id, else the one of
    ``state`` (``MEMBER`` or ``INVITED``) with that name. When the service cannot list them just then (5xx),
    ``given`` is taken as an id: the action says whether it exists. ``NotResolved`` for no match, or several."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        teams = client.list_teams()
    except MemmyApiError as err:
        if err.status < 500:
            raise
        return NamedTeam(given)
    return team_among(teams, given, state)


def team_among(teams: list[Team], given: str, state: str = MEMBER) -> NamedTeam:
    """``team_named`` on a listing already read."""
    for team in teams:
        if str(team.get("id")) == given:
            return NamedTeam(given, str(team.get("name", "")))
    matches = [t for t in teams if t.get("state") == state and _same(str(t.get("name", "")), given)]
    if len(matches) == 1:
        return NamedTeam(str(matches[0]["id"]), str(matches[0].get("name", "")))
    where = "of your teams" if state == MEMBER else "of your invitations"
    lister = "memmy-kb team ls" if state == MEMBER else "memmy-kb team invites"
    if not matches:
        raise NotResolved(
            f"none {where} has the id or name '{one_line(given)}': give the team's id, or its name if no "
            f"other has it (`{lister}` lists them)"
        )
    raise NotResolved(_ambiguous(f"{len(matches)} {where} are named '{one_line(given)}'", matches, "team"))


def _ambiguous(heading: str, rows: list[Team] | list[TeamMember], noun: str) -> str:
    shown = table(
        [str(r.get("id") or r.get("user_id")), one_line(r.get("name") or r.get("display_name") or "")]
        for r in rows[:MAX_CANDIDATES]
    )
    lines = [f"{heading}: give the id of the {noun} you mean:", *(f"  {line}" for line in shown)]
    if len(rows) > MAX_CANDIDATES:
        lines.append(f"  … and {len(rows) - MAX_CANDIDATES} more")
    return "\n".join(lines)


def person_in(detail: TeamDetail, given: str) -> TeamMember:
    """The member (or invited person) of the team that ``given`` names: the one with that user id, else
    the one with that display name. ``NotResolved`` when none has it, or several do."""
    members = detail.get("members") or []
    for member in members:
        if member.get("user_id") == given:
            return member
    matches = [m for m in members if _same(str(m.get("display_name", "")), given)]
    if len(matches) == 1:
        return matches[0]
    team = f"team '{one_line(detail.get('name', ''))}'"
    if not matches:
        raise NotResolved(
            f"nobody in {team} has the user id or name '{one_line(given)}': give their user id, or their "
            f"name if no other member has it (`memmy-kb team show {detail.get('id')}` lists them)"
        )
    heading = f"{len(matches)} people in {team} are named '{one_line(given)}'"
    raise NotResolved(_ambiguous(heading, matches, "person").replace("the id of", "the user id of"))


def person_label(member: TeamMember) -> str:
    """``'Display Name' (user id)``."""
    return f"'{one_line(member.get('display_name', ''))}' ({one_line(member.get('user_id', ''))})"
