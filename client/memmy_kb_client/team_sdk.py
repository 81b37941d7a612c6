"""The SDK's methods for the team routes and the knowledge base ↔ team routes (docs/teams.md, "Routes"),
mixed into ``sdk.MemmyClient``: one method per route, each returning its reply as the ``team_replies``
type of the route's response schema; every non-2xx answer raises ``MemmyApiError`` as the others do."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import quote

if TYPE_CHECKING:
    from memmy_kb_client.replies import ActivityList
    from memmy_kb_client.team_replies import (
        Team,
        TeamDetail,
        TeamList,
        TeamMember,
        TeamRole,
        TeamShare,
        TeamShareList,
    )

Block = Literal["team", "owner"]


def _segment(value: str) -> str:
    """One path parameter, percent-encoded whole (as ``sdk`` encodes every id)."""
    return quote(value, safe="")


def _team(team_id: str) -> str:
    return f"/teams/{_segment(team_id)}"


class TeamMethods:
    """The team routes, on a client that sends requests with ``_request`` (``sdk.MemmyClient``)."""

    if TYPE_CHECKING:  # MemmyClient's own, declared for the type checker only (no stub at run time)

        def _request(
            self,
            method: str,
            path: str,
            *,
            json: Any = None,
            headers: dict[str, str] | None = None,
            params: dict[str, str] | None = None,
        ) -> dict[str, Any]: ...

    def create_team(self, name: str) -> Team:
        """A new team (201), the caller its owner."""
        return cast("Team", self._request("POST", "/teams", json={"name": name}))

    def list_teams(self) -> list[Team]:
        """The caller's teams and open invitations, each with the caller's ``state`` and ``role``."""
        return cast("TeamList", self._request("GET", "/teams"))["items"]

    def get_team(self, team_id: str) -> TeamDetail:
        """The team with its members and knowledge bases (both empty for an invited caller)."""
        return cast("TeamDetail", self._request("GET", _team(team_id)))

    def rename_team(self, team_id: str, name: str) -> Team:
        return cast("Team", self._request("PATCH", _team(team_id), json={"name": name}))

    def delete_team(self, team_id: str) -> None:
        """Delete the team (owner only, 204): its members stop reading its knowledge bases at once."""
        self._request("DELETE", _team(team_id))

    def invite(self, team_id: str, identifier: str) -> TeamMember:
        """Invite a person by user id, phone or email (201 the invitation)."""
        path = f"{_team(team_id)}/members"
        return cast("TeamMember", self._request("POST", path, json={"identifier": identifier}))

    def set_team_role(self, team_id: str, user_id: str, role: TeamRole) -> TeamMember:
        """Make a member ``admin`` or ``member``; ``owner`` transfers the ownership (owner only)."""
        path = f"{_team(team_id)}/members/{_segment(user_id)}"
        return cast("TeamMember", self._request("PATCH", path, json={"role": role}))

    def remove_team_member(self, team_id: str, user_id: str) -> None:
        """Remove a member, cancel an invitation, or (one's own id) leave the team (204)."""
        self._request("DELETE", f"{_team(team_id)}/members/{_segment(user_id)}")

    def accept_team(self, team_id: str) -> TeamMember:
        """Accept an invitation: the caller's membership."""
        return cast("TeamMember", self._request("POST", f"{_team(team_id)}/accept"))

    def decline_team(self, team_id: str, block: Block | None = None) -> None:
        """Decline an invitation (204), blocking the team or its owner when ``block`` says so."""
        self._request("POST", f"{_team(team_id)}/decline", json={"block": block})

    def team_activity(self, team_id: str) -> ActivityList:
        return cast("ActivityList", self._request("GET", f"{_team(team_id)}/activity"))

    def share_with_team(self, kb_id: str, team_id: str) -> TeamShare:
        """Share one's own knowledge base with a team one is a member of (201)."""
        path = f"/knowledge-bases/{_segment(kb_id)}/teams"
        return cast("TeamShare", self._request("POST", path, json={"team_id": team_id}))

    def list_kb_teams(self, kb_id: str) -> list[TeamShare]:
        """The teams one's own knowledge base is shared with."""
        path = f"/knowledge-bases/{_segment(kb_id)}/teams"
        return cast("TeamShareList", self._request("GET", path))["items"]

    def unshare_from_team(self, kb_id: str, team_id: str) -> None:
        """Unshare a knowledge base from a team (its owner; the team's owner or an admin), 204."""
        self._request("DELETE", f"/knowledge-bases/{_segment(kb_id)}/teams/{_segment(team_id)}")
