"""Fixtures of the teams rules: the people registered (``tests.support.teams.World``) and a team of alice's."""

from __future__ import annotations

import pytest

from memmy_kb.domain.teams import teams
from tests.support.fakes import FakeStores
from tests.support.teams import World, new_world


@pytest.fixture
def world(stores: FakeStores) -> World:
    return new_world(stores)


@pytest.fixture
def team_id(world: World) -> str:
    """A team alice owns."""
    return teams.create_team(world.teams, world.stores.profiles, "alice", "销售部", policy=world.policy).team.team_id
