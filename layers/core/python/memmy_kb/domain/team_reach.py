"""What a caller reads through their teams (docs/teams.md, "Data"): read-time expansion of their
memberships and their teams' META into KBs, no item per member and KB.

A KB is read through a team when the caller is a **member** of it (an invitation gives nothing) and the
team's META (still there) lists the KB. Such a KB is read as a reader reads a KB shared with them
(``TeamGrant``, never written anywhere); a direct grant on the same KB wins for everything shown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memmy_kb.records import GrantRecord

if TYPE_CHECKING:
    from memmy_kb.domain.ports.team_shares import Reach


class TeamGrant(GrantRecord):
    """A reader's access to a KB through one or more teams: ``teams`` holds each one's (id, name), by id;
    ``recall`` is on when any of the memberships' choices for it is."""

    teams: tuple[tuple[str, str], ...] = ()


def team_grants(reach: Reach, user_id: str) -> dict[str, TeamGrant]:
    """The KBs the caller reads through teams they are a member of, by KB id (direct grants aside)."""
    found: dict[str, TeamGrant] = {}
    for membership in sorted(reach.memberships, key=lambda m: m.team_id):
        team = reach.teams.get(membership.team_id)
        if membership.state != "member" or team is None:
            continue
        for kb_id, shared in team.kbs.items():
            recalls = membership.recalls(kb_id)
            known = found.get(kb_id)
            if known is not None:
                found[kb_id] = known.model_copy(
                    update={"recall": known.recall or recalls, "teams": (*known.teams, (team.team_id, team.name))}
                )
                continue
            found[kb_id] = TeamGrant(
                user_id=user_id,
                kb_id=kb_id,
                role="reader",
                recall=recalls,
                memos_kb_id=shared.memos_kb_id,
                memos_backend=shared.memos_backend,
                owner_id=shared.owner_id,
                granted_at=shared.shared_at,
                teams=((team.team_id, team.name),),
            )
    return found


def readable(reach: Reach, user_id: str) -> list[GrantRecord]:
    """Every KB the caller reads: their grants, then the KBs read only through teams."""
    direct = {g.kb_id for g in reach.grants}
    return [*reach.grants, *(g for kb_id, g in team_grants(reach, user_id).items() if kb_id not in direct)]


def recall_reach(reach: Reach, user_id: str) -> list[GrantRecord]:
    """The recall scope: grants with recall on ∪ KBs read only through teams with the member's recall on,
    one entry a KB.

    A KB the caller holds a grant on (their own, or shared with them directly) follows that grant's
    setting alone: sharing it with a team they are in later does not turn it back on (their toggle sets
    the grant and every membership it is read through alike)."""
    through_teams = team_grants(reach, user_id)
    scope: list[GrantRecord] = []
    for grant in reach.grants:
        through_teams.pop(grant.kb_id, None)
        if grant.recall:
            scope.append(grant)
    scope.extend(g for g in through_teams.values() if g.recall)
    return scope
