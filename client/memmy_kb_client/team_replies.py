"""The cloud's replies about teams as the client receives them (docs/teams.md, "Routes"): one ``TypedDict``
per response schema, named and shaped as the cloud's models, as ``replies`` has the others; the check in
``tests/unit/client/test_replies.py`` covers this module too. Types only: nothing here checks a reply."""

from __future__ import annotations

from typing import Literal, TypedDict

TeamRole = Literal["owner", "admin", "member"]
MembershipState = Literal["invited", "member"]


class TeamPerson(TypedDict):
    user_id: str
    display_name: str


class Team(TypedDict):
    """A team as one of its members (or an invited person) sees it: ``role`` and ``state`` are the caller's."""

    id: str
    name: str
    owner: TeamPerson
    role: TeamRole
    state: MembershipState
    invited_by: TeamPerson | None
    member_count: int
    invited_count: int
    kb_count: int
    created_at: str


class TeamList(TypedDict):
    """``GET /teams``: the caller's teams and open invitations."""

    items: list[Team]


class TeamMember(TypedDict):
    """A member of a team, or a person invited to it."""

    user_id: str
    display_name: str
    role: TeamRole
    state: MembershipState
    invited_at: str | None
    joined_at: str | None


class TeamKnowledgeBase(TypedDict):
    """A knowledge base shared with a team."""

    id: str
    name: str
    owner: TeamPerson
    shared_at: str


class TeamDetail(TypedDict):
    """``GET /teams/{team_id}``: the team, its members and its knowledge bases (both empty for an invited
    caller)."""

    id: str
    name: str
    owner: TeamPerson
    role: TeamRole
    state: MembershipState
    invited_by: TeamPerson | None
    member_count: int
    invited_count: int
    kb_count: int
    created_at: str
    members: list[TeamMember]
    knowledge_bases: list[TeamKnowledgeBase]


class TeamShare(TypedDict):
    """A team a knowledge base is shared with (``POST``/``GET /knowledge-bases/{kb_id}/teams``)."""

    team_id: str
    name: str
    shared_by: TeamPerson
    shared_at: str


class TeamShareList(TypedDict):
    items: list[TeamShare]


class KbTeam(TypedDict):
    """A team through which the caller reads a knowledge base (``KnowledgeBase.teams``)."""

    id: str
    name: str


class RecallTeam(TypedDict):
    """The team through which the caller reads an excerpt's knowledge base (``RecallItem.team``)."""

    id: str
    name: str
