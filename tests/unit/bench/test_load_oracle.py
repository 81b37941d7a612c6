"""The oracle of ``make load`` (bench/load_oracle.py) on hand-written and recorded histories: it must fail
on a leak, and must not blame the service for a change still in flight."""

from __future__ import annotations

import math

import httpx
import pytest

from bench import load
from bench.load_model import MAX_OWNED_KBS, MEMOS_PROJECT_KBS, Kb, RequestRecord, memos_projects
from bench.load_oracle import (
    ANY_USER,
    Change,
    Outcome,
    Recall,
    check_scope,
    compare_sets,
    markers_in,
    membership_after,
    memos_residue,
    recall_setting_after,
)
from bench.load_report import percentile
from bench.load_worker import EXPECTED

KB = "kb_a"
MARKER = "kbm0123456789ab"
MARKERS = {MARKER: KB}
OWNER, READER = "owner", "reader"


def created(start: float = 0.0, end: float = 0.5) -> Change:
    return Change(OWNER, KB, "on", start, end, "create")


def share(start: float, end: float) -> Change:
    return Change(READER, KB, "on", start, end, "share")


def revoke(start: float, end: float) -> Change:
    return Change(READER, KB, "off", start, end, "revoke")


def recall(user: str, start: float, end: float, *markers: str) -> Recall:
    return Recall(user, start, end, markers or (MARKER,), excerpts=1)


def kinds(changes: list[Change], recalls: list[Recall]) -> list[str]:
    return [v.kind for v in check_scope(changes, recalls, MARKERS).violations]


# ---------------------------------------------------------------------------------------- scope


def test_a_recall_after_a_completed_revoke_that_returns_the_kb_is_a_violation():
    history = [created(), share(1, 2), revoke(3, 4)]
    check = check_scope(history, [recall(READER, 5, 6)], MARKERS)
    (violation,) = check.violations
    assert violation.kind == "scope"
    assert "reader's recall [5.000, 6.000]" in violation.detail
    assert "revoke [3.000, 4.000]" in violation.detail


def test_a_recall_overlapping_the_revoke_is_not_held_against_the_service():
    history = [created(), share(1, 2), revoke(3, 4)]
    assert kinds(history, [recall(READER, 3.5, 4.5), recall(READER, 2.5, 3.2)]) == []


def test_a_share_started_before_the_recall_ended_may_have_given_the_kb_back():
    history = [created(), share(1, 2), revoke(3, 4), share(6.5, 8)]
    assert kinds(history, [recall(READER, 5, 7)]) == []
    # ...but not to a recall that ended before that share started.
    assert kinds(history, [recall(READER, 5, 6)]) == ["scope"]


def test_a_share_overlapping_the_revoke_may_have_landed_after_it():
    history = [created(), share(2.5, 3.5), revoke(3, 4)]
    assert kinds(history, [recall(READER, 5, 6)]) == []


def test_a_share_that_ended_before_the_revoke_started_does_not_excuse_a_leak():
    history = [created(), share(1, 2), share(2.1, 2.9), revoke(3, 4)]
    assert kinds(history, [recall(READER, 5, 6)]) == ["scope"]


def test_a_kb_never_shared_with_the_caller_is_always_out_of_scope():
    assert kinds([created()], [recall(READER, 5, 6), recall(OWNER, 5, 6)]) == ["scope"]


def test_the_owner_may_see_a_kb_whose_creation_is_in_flight():
    assert kinds([created(1, 3)], [recall(OWNER, 2, 2.5)]) == []


def test_a_completed_delete_excludes_the_kb_whatever_overlapped_it():
    history = [
        created(),
        share(1, 2),
        share(9.5, 10.5),  # overlaps the delete: it found the KB gone, or was removed with it
        Change(ANY_USER, KB, "off", 10, 11, "delete-kb"),
        Change(OWNER, KB, "on", 10.2, 10.4, "toggle-on"),
    ]
    assert kinds(history, [recall(READER, 12, 13), recall(OWNER, 12, 13)]) == ["scope", "scope"]
    assert kinds(history, [recall(READER, 10.5, 12)]) == []


def test_toggles_off_and_on():
    off = Change(READER, KB, "off", 3, 4, "toggle-off")
    on = Change(READER, KB, "on", 6, 7, "toggle-on")
    history = [created(), share(1, 2), off, on]
    assert kinds(history, [recall(READER, 4.5, 5.5)]) == ["scope"]
    assert kinds(history, [recall(READER, 4.5, 6.5), recall(READER, 7.5, 8)]) == []


def test_an_on_change_of_unknown_outcome_may_land_any_time_later():
    history = [created(), share(1, 2), revoke(3, 4), Change(READER, KB, "on", 5, math.inf, "share?")]
    assert kinds(history, [recall(READER, 4.5, 4.9)]) == ["scope"]
    assert kinds(history, [recall(READER, 100, 101)]) == []


def test_a_marker_of_no_known_kb_is_a_violation():
    assert kinds([created()], [recall(OWNER, 1, 2, "kbmffffffffffff")]) == ["unknown-marker"]


def test_the_check_counts_what_it_put_to_the_test():
    history = [created(), share(1, 2), revoke(3, 4)]
    recalls = [
        Recall(READER, 5, 6, (), 0),  # KB_A must be excluded, after a revoke
        Recall(OWNER, 5, 6, (MARKER,), 1),
        Recall(READER, 0.1, 0.2, (), 0),  # before any document: not counted
    ]
    check = check_scope(history, recalls, MARKERS, documents_since={KB: 0.6})
    assert (check.recalls, check.excerpts, check.attributed) == (3, 1, 1)
    assert (check.must_exclude, dict(check.must_exclude_by)) == (1, {"revoke": 1})
    assert check.violations == []


def test_a_history_recorded_with_the_recall_switch_ignored_fails():
    """What ``python -m bench.load --fault recall-ignores-setting`` recorded in one run: the reader
    turned recall off, and the next recalls still returned the KB (its toggle and two leaking recalls,
    times shifted; the create, the share and the two earlier recalls added around them)."""
    kb, marker, user = "kb_9d8686f33179552e1cb694f6", "kbm60fbea7e3e56", "load-0002-0"
    history = [
        Change("load-0002-3", kb, "on", 1.212, 1.904, "create"),
        Change(user, kb, "on", 2.871, 3.230, "share"),
        Change(user, kb, "off", 5.246, 5.455, "toggle-off"),
    ]
    recalls = [
        Recall(user, 4.101, 4.388, (marker,), 2),  # recall was on: fine
        Recall(user, 5.300, 5.612, (marker,), 2),  # the toggle was in flight: fine
        Recall(user, 5.974, 6.259, (marker,), 2),  # after the toggle answered: a leak
        Recall(user, 6.259, 6.503, (marker,), 2),
    ]
    check = check_scope(history, recalls, {marker: kb})
    assert [v.kind for v in check.violations] == ["scope", "scope"]
    assert all(f"of {kb} (marker {marker})" in v.detail for v in check.violations)


def test_markers_are_found_in_titles_and_text():
    texts = ["《kbm0123456789ab note 3》", "text kbm0123456789ab and kbmaaaaaaaaaaaa", "kbm123 too short"]
    assert markers_in(texts) == ("kbm0123456789ab", "kbmaaaaaaaaaaaa")


# ------------------------------------------------------------------------------------ final state


def ok(start: float, end: float) -> Outcome:
    return Outcome(start, end, True)


def test_membership_follows_the_alternating_successes():
    refused = Outcome(5, 6, False)
    assert membership_after([], []) is False
    assert membership_after([ok(1, 2)], []) is True
    assert membership_after([ok(1, 2), refused], [ok(3, 4)]) is False
    assert membership_after([ok(1, 2), ok(5, 6)], [ok(3, 4)]) is True
    assert membership_after([ok(1, 2), Outcome(5, 6, None)], [ok(3, 4)]) is None


def test_membership_that_no_sequence_of_answers_explains_is_reported():
    with pytest.raises(ValueError, match="2 more successful shares"):
        membership_after([ok(1, 2), ok(3, 4)], [])
    with pytest.raises(ValueError, match="-1 more"):
        membership_after([], [ok(1, 2)])


def test_the_recall_setting_is_the_last_successful_toggle_after_the_grant():
    grant = ok(1, 2)
    assert recall_setting_after(grant, []) is True
    assert recall_setting_after(grant, [(ok(3, 4), False)]) is False
    assert recall_setting_after(grant, [(ok(3, 4), False), (Outcome(5, 6, False), True)]) is False
    assert recall_setting_after(grant, [(ok(5, 6), True), (ok(3, 4), False)]) is True
    # Toggles of an earlier grant do not count; one overlapping the grant, or unknown, decides nothing.
    assert recall_setting_after(grant, [(ok(0.1, 0.5), False)]) is True
    assert recall_setting_after(grant, [(ok(1.5, 2.5), False)]) is None
    assert recall_setting_after(grant, [(Outcome(3, 4, None), False)]) is None


def test_compare_sets_names_what_was_lost_and_what_appeared():
    found = compare_sets("grant", "reader's list", {"kb_a", "kb_b"}, {"kb_b", "kb_c"})
    assert [(v.kind, v.detail) for v in found] == [
        ("lost-grant", "reader's list: kb_a missing"),
        ("unexpected-grant", "reader's list: kb_c present"),
    ]
    assert compare_sets("file", "x", {1}, {1}) == []


def memos_kb(kb_id: str, *uploads: str) -> dict:
    files = [{"id": f"f{i}", "name": f"note [{u}].txt", "status": "completed"} for i, u in enumerate(uploads)]
    return {"id": f"m-{kb_id}", "name": f"memmy:{kb_id}", "linked": True, "files": files}


def test_memos_holding_exactly_the_live_kbs_and_files_is_clean():
    state = {"knowledge_bases": [memos_kb("kb_a", "up_1", "up_2")]}
    assert memos_residue(state, {"kb_a": {"up_1", "up_2"}}) == []


def test_memos_residue_lost_and_duplicate_files_are_reported():
    state = {
        "knowledge_bases": [
            memos_kb("kb_a", "up_1", "up_3", "up_3"),
            memos_kb("kb_deleted", "up_9"),
        ]
    }
    found = sorted(
        (v.kind, v.detail) for v in memos_residue(state, {"kb_a": {"up_1", "up_2"}, "kb_b": set()})
    )
    assert found == [
        ("memos-duplicate", "MemOS KB of kb_a holds up_3 twice"),
        ("memos-lost", "MemOS KB of kb_a lacks the file of up_2"),
        ("memos-lost", "live KB kb_b has no MemOS KB"),
        ("memos-residue", "MemOS KB of kb_a still holds the file of up_3"),
        ("memos-residue", "MemOS still holds KB memmy:kb_deleted (1 files)"),
    ]


# ----------------------------------------------------------------------------------- the report


def report(violations: list, statuses: list[tuple[str, int]]) -> load.LoadReport:
    requests = [
        RequestRecord(route, status, 0.0, 0.1, status in EXPECTED[route] or status == 429)
        for route, status in statuses
    ]
    scope = check_scope([], [], {})
    return load.LoadReport(load.LoadSettings(seed=1), 1.0, requests, scope, violations, 0, 1, {})


def test_the_report_passes_only_without_violations_and_errors():
    assert report([], [("POST /recall", 200), ("POST /knowledge-bases/{kb}/members", 429)]).ok
    assert not report([], [("POST /recall", 503)]).ok
    assert not report([], [("POST /recall", 0)]).ok  # no answer
    crashed = report([], [("POST /recall", 200)])
    crashed.driver_errors.append("load-0: Traceback ...")
    assert not crashed.ok  # a user's thread that died fails the run
    assert "DRIVER ERROR load-0" in crashed.render()
    failing = report(check_scope([created()], [recall(READER, 1, 2)], MARKERS).violations, [])
    assert not failing.ok
    text = failing.render()
    assert "VIOLATION [scope]" in text
    assert "verdict: FAIL (1 violations, 0 errors)" in text


def test_the_report_table_counts_429s_apart_from_errors():
    text = report(
        [], [("POST /recall", 200), ("POST /recall", 500), ("POST /knowledge-bases/{kb}/members", 429)]
    ).render()
    assert "rate limited (429): 1" in text
    assert "errors (5xx, no answer, unexpected status): 1" in text
    assert "error: POST /recall -> 500 x1" in text
    assert "verdict: FAIL (0 violations, 1 errors)" in text


def test_make_load_exits_non_zero_on_a_violation(monkeypatch, capsys):
    failing = report(check_scope([created()], [recall(READER, 1, 2)], MARKERS).violations, [])
    monkeypatch.setattr(load, "run", lambda settings: failing)
    assert load.main(["--duration", "1"]) == 1
    assert "verdict: FAIL" in capsys.readouterr().out
    monkeypatch.setattr(load, "run", lambda settings: report([], [("POST /recall", 200)]))
    assert load.main([]) == 0


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile([7.0], 99)) == (
        50,
        99,
        7,
    )


def test_a_share_refused_for_another_reason_than_already_member_is_an_error():
    codes = iter(["already_member", "identifier_ambiguous"])

    def answer(request):
        return httpx.Response(409, json={"error": {"code": next(codes), "message": "no"}})

    worker = object.__new__(load.Worker)
    worker.model = load.Model()
    worker.http = httpx.Client(base_url="http://api.test", transport=httpx.MockTransport(answer))
    route = "POST /knowledge-bases/{kb}/members"
    for _ in range(2):
        response, outcome = worker.call(
            route, "POST", "/knowledge-bases/kb_a/members", json={"identifier": "x"}
        )
        assert (response.status_code, outcome.ok) == (409, False)
    assert [r.expected for r in worker.model.requests] == [True, False]


def test_the_load_stack_has_room_in_memos_for_every_users_kbs_twice():
    # One project (the single key, as deployed) for the default six users; more backends for sixty, whose
    # 180 KBs would fill one project's 100 and make creates answer 503 memos_quota_exhausted.
    assert memos_projects(6) == 1
    for users in (6, 17, 60, 600):
        assert memos_projects(users) * MEMOS_PROJECT_KBS >= 2 * MAX_OWNED_KBS * users


def test_asking_whether_a_user_is_a_member_stores_nothing():
    model = load.Model()
    model.kbs["kb_a"] = Kb("kb_a", OWNER, MARKER, Outcome(0, 1, True))
    assert not model.believed_member(READER, "kb_a")
    assert [kb.kb_id for kb in model.visible(OWNER)] == ["kb_a"]
    assert model.visible(READER) == []
    assert (dict(model.shares), dict(model.removals)) == ({}, {})
