"""Sharing a KB with a team (docs/teams.md): one item written whatever the team's size, read-time
expansion for its members (``memmy_kb.domain.team_reach``). No MemOS call.

The KB's owner shares it with a team they are a member of (any role); the KB's owner, or the team's owner
or an admin, unshares it. A caller who is not a member of the team gets the 404 of a team that does not
exist, and a caller without access to the KB the 404 of a KB that does not exist: no existence oracle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from memmy_kb.domain.access import require_owner
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.errors import Conflict, Forbidden, NotFound, kb_not_found, team_not_found
from memmy_kb.records import TeamKb, TeamRecord, utc_now


@dataclass(frozen=True)
class TeamLimits:
    """``TEAM_MAX_KBS`` and ``KB_MAX_TEAMS`` (docs/teams.md, "Limits")."""

    max_team_kbs: int = 50
    max_kb_teams: int = 20


@dataclass(frozen=True)
class TeamShareView:
    """A team a KB is shared with, as its owner sees it."""

    team_id: str
    name: str
    shared_by: str
    shared_by_name: str
    shared_at: datetime


def share_with_team(
    kbs: KnowledgeBaseStore,
    caller: str,
    kb_id: str,
    team_id: str,
    *,
    limits: TeamLimits,
    retention_days: int,
    clock: Callable[[], datetime] = utc_now,
) -> TeamRecord:
    """Share the caller's KB with a team they are a member of; the team as it now is.

    404 ``team_not_found`` unless the caller is a member (state member) of a team that exists; 409
    ``already_shared``, ``team_kb_limit_reached`` or ``kb_team_limit_reached``."""
    grant = require_owner(kbs, caller, kb_id)
    reads = kbs.read_team_share(caller, team_id)
    team, membership = reads.team, reads.membership
    if team is None or membership is None or membership.state != "member":
        raise team_not_found()
    if kb_id in team.kbs:
        raise _already_shared()
    now = clock()
    share = TeamKb(
        memos_kb_id=grant.memos_kb_id,
        memos_backend=grant.memos_backend,
        owner_id=grant.owner_id,
        shared_by=caller,
        shared_at=now,
    )
    try:
        kbs.put_team_share(
            team_id,
            kb_id,
            share,
            max_team_kbs=limits.max_team_kbs,
            max_kb_teams=limits.max_kb_teams,
            activity=new_activity("team_shared", kb_id, caller, team_id, now, retention_days),
        )
    except ItemMissing as err:
        raise (kb_not_found() if err.item == "kb" else team_not_found()) from None
    except AlreadyExists:
        raise _already_shared() from None
    except ConditionFailed as err:
        if err.item == "team_kb_count":
            raise Conflict(
                f"The team already has {limits.max_team_kbs} knowledge bases shared with it.",
                code="team_kb_limit_reached",
            ) from None
        raise Conflict(
            f"The knowledge base is already shared with {limits.max_kb_teams} teams.", code="kb_team_limit_reached"
        ) from None
    return team.model_copy(update={"kbs": {**team.kbs, kb_id: share}, "kb_count": team.kb_count + 1})


def unshare_from_team(
    kbs: KnowledgeBaseStore,
    caller: str,
    kb_id: str,
    team_id: str,
    *,
    retention_days: int,
    clock: Callable[[], datetime] = utc_now,
) -> None:
    """Unshare a KB from a team: the KB's owner, or the team's owner or an admin (a member who shared
    someone else's KB gets 403 ``team_admin_only``). Members stop reading it at their next query."""
    grant = kbs.get_grant(caller, kb_id)
    owns_kb = grant is not None and grant.role == "owner"
    reads = kbs.read_team_share(caller, team_id)
    team, membership = reads.team, reads.membership
    member = membership is not None and membership.state == "member"
    if team is None or not (owns_kb or member):
        raise team_not_found()
    if kb_id not in team.kbs:
        if not member:
            raise team_not_found()  # only its members learn that a team exists
        if grant is not None:
            raise NotFound("The knowledge base is not shared with this team.", code="team_share_not_found")
        raise kb_not_found()  # the KB is none of the caller's: as a KB that does not exist
    if not owns_kb and (membership is None or membership.role not in ("owner", "admin")):
        raise Forbidden(
            "Only the team's owner or an admin may unshare another member's knowledge base.", code="team_admin_only"
        )
    now = clock()
    try:
        kbs.delete_team_share(
            team_id, kb_id, activity=new_activity("team_unshared", kb_id, caller, team_id, now, retention_days)
        )
    except ItemMissing:
        raise NotFound("The knowledge base is not shared with this team.", code="team_share_not_found") from None


def list_team_shares(
    kbs: KnowledgeBaseStore, profiles: ProfileStore, caller: str, kb_id: str
) -> list[TeamShareView]:
    """The teams the caller's KB is shared with (owner only), by name."""
    require_owner(kbs, caller, kb_id)
    kb = kbs.get_kb(kb_id)
    if kb is None:
        raise kb_not_found()
    teams = [t for t in kbs.batch_get_teams(sorted(kb.teams)).values() if kb_id in t.kbs]
    sharers = profiles.batch_get_profiles({t.kbs[kb_id].shared_by for t in teams})
    views = []
    for team in teams:
        shared = team.kbs[kb_id]
        profile = sharers.get(shared.shared_by)
        name = profile.display_name if profile else shared.shared_by
        views.append(TeamShareView(team.team_id, team.name, shared.shared_by, name, shared.shared_at))
    return sorted(views, key=lambda v: (v.name, v.team_id))


def _already_shared() -> Conflict:
    return Conflict("The knowledge base is already shared with this team.", code="already_shared")
