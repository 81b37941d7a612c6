"""``CreateIntents``' contract, on the fake and on DynamoDB."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_kb.domain.storage import ConditionFailed, RequestSeen
from memmy_kb.records import RequestRecord
from tests.support.factories import UNCAPPED_COUNT, at, kb_record, owner_grant_for
from tests.support.store_contract import Backend, refused

# == CreateIntents =====================================================================================


def put_intent(
    backend: Backend, kb_id: str = "kb_1", minute: int = 0, *, max_owned: int = 5, request: RequestRecord | None = None, now: int = 0
) -> None:
    backend.intents.put_create_intent(
        kb_id, f"memmy:{kb_id}", at(minute), 1_900_000_000, owner_id="alice", max_owned=max_owned, request=request, now=now
    )


def key_record(attempt: str = "kb_1", **changes: Any) -> RequestRecord:
    return RequestRecord.model_validate(
        {
            "operation": "create_kb",
            "key_hash": "h1",
            "payload_hash": "p1",
            "attempt": attempt,
            "in_progress_until": 1_000,
            "expires_at": 90_000,
            **changes,
        }
    )


def test_given_intents_when_stale_ones_are_queried_then_older_ones_oldest_first_limited_and_deleted_ones_gone(
    backend: Backend,
) -> None:
    put_intent(backend, "kb_b", 20)
    put_intent(backend, "kb_a", 10)
    put_intent(backend, "kb_c", 50)

    assert backend.intents.query_stale_intents(at(30), 10) == [("kb_a", "memmy:kb_a"), ("kb_b", "memmy:kb_b")]
    assert backend.intents.query_stale_intents(at(30), 1) == [("kb_a", "memmy:kb_a")]
    backend.intents.delete_create_intent("kb_a")
    backend.intents.delete_create_intent("kb_missing")
    assert backend.intents.query_stale_intents(at(30), 10) == [("kb_b", "memmy:kb_b")]


def test_given_the_owner_at_the_cap_when_an_intent_is_put_then_condition_failed_kb_count_and_no_intent(
    backend: Backend,
) -> None:
    first = kb_record("kb_0")
    backend.kbs.put_kb_with_owner_grant(first, owner_grant_for(first), max_owned=1, request=None)

    assert refused(ConditionFailed, lambda: put_intent(backend, max_owned=1)) == "kb_count"
    assert backend.intents.query_stale_intents(at(60), 10) == []
    put_intent(backend, max_owned=2)


def test_given_a_create_recorded_when_its_intent_was_put_then_the_intent_is_gone(backend: Backend) -> None:
    put_intent(backend)
    record = kb_record("kb_1")

    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=5, request=None)

    assert backend.intents.query_stale_intents(at(60), 10) == []


def test_given_a_key_claimed_by_an_intent_when_claimed_again_then_request_seen_until_completed_or_expired(
    backend: Backend,
) -> None:
    claim = key_record()
    put_intent(backend, request=claim, now=10)

    with pytest.raises(RequestSeen) as seen:
        put_intent(backend, "kb_2", request=key_record("kb_2"), now=20)
    assert seen.value.record == claim
    record = kb_record("kb_1")
    answered = claim.model_copy(update={"status": "completed", "result": '{"kb": 1}'})
    backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), max_owned=5, request=answered)
    with pytest.raises(RequestSeen) as again:
        put_intent(backend, "kb_2", request=key_record("kb_2"), now=20)
    assert again.value.record == answered
    assert backend.intents.query_stale_intents(at(60), 10) == []
    put_intent(backend, "kb_3", request=key_record("kb_3"), now=100_000)  # expired: taken over
    assert backend.intents.query_stale_intents(at(60), 10) == [("kb_3", "memmy:kb_3")]


def test_given_a_claim_taken_over_when_the_old_attempt_records_its_create_then_condition_failed_request(
    backend: Backend,
) -> None:
    put_intent(backend, request=key_record(), now=10)
    put_intent(backend, "kb_2", request=key_record("kb_2"), now=5_000)  # past in_progress_until
    record = kb_record("kb_1")
    late = key_record().model_copy(update={"status": "completed", "result": "{}"})

    assert refused(
        ConditionFailed, lambda: backend.kbs.put_kb_with_owner_grant(record, owner_grant_for(record), request=late, max_owned=UNCAPPED_COUNT)
    ) == "request"
    assert backend.kbs.get_kb("kb_1") is None


@pytest.mark.parametrize("keep_intent", [False, True])
def test_given_a_failed_keyed_create_when_abandoned_then_the_key_is_free_and_the_intent_kept_only_if_asked(
    backend: Backend, keep_intent: bool
) -> None:
    claim = key_record()
    put_intent(backend, request=claim, now=10)

    backend.intents.abandon_create("kb_1", request=claim, keep_intent=keep_intent)

    put_intent(backend, "kb_2", request=key_record("kb_2"), now=20)
    stale = [kb_id for kb_id, _ in backend.intents.query_stale_intents(at(60), 10)]
    assert stale == (["kb_1", "kb_2"] if keep_intent else ["kb_2"])


def test_given_a_key_taken_over_when_the_old_create_is_abandoned_then_its_intent_still_goes_and_the_key_stays(
    backend: Backend,
) -> None:
    put_intent(backend, request=key_record(), now=10)
    put_intent(backend, "kb_2", request=key_record("kb_2", in_progress_until=10_000), now=5_000)

    backend.intents.abandon_create("kb_1", request=key_record(), keep_intent=False)
    backend.intents.abandon_create("kb_9", request=None, keep_intent=False)

    assert backend.intents.query_stale_intents(at(60), 10) == [("kb_2", "memmy:kb_2")]
    with pytest.raises(RequestSeen):
        put_intent(backend, "kb_3", request=key_record("kb_3"), now=5_001)
