"""The teams bench's claims, at a small size: recall's DynamoDB requests do not grow with the number of
teams, and a removal or a team share costs the same whatever the team's size (``bench.team_costs``)."""

from __future__ import annotations

import pytest

from bench import team_costs


def test_recall_reads_stay_flat_with_teams_and_writes_do_not_follow_the_team_s_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(team_costs, "SHARED_KBS", 12)
    monkeypatch.setattr(team_costs, "OWNERS", 6)
    monkeypatch.setattr(team_costs, "TEAM_COUNTS", (0, 2, 6))
    monkeypatch.setattr(team_costs, "TEAM_SIZES", (3, 40))
    monkeypatch.setattr(team_costs, "RECALLS", 3)

    recalls, writes = team_costs.run(verbose=False)

    direct, two, six = recalls
    assert [r.scope_size for r in recalls] == [12, 12, 12]
    # Teams add the teams' META batch before and after the search, whatever their number.
    assert two.requests == six.requests
    assert two.requests - direct.requests == pytest.approx(2)
    by_size = {(w.what, w.members): (w.calls, w.wru) for w in writes}
    assert by_size[("removal", 3)] == by_size[("removal", 40)]
    assert by_size[("team share", 3)] == by_size[("team share", 40)]
