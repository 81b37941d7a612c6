"""``CleanupExecutions``' and ``UploadRequeue``'s contract, on the fakes and on Step Functions and SQS (moto)."""

from __future__ import annotations

from tests.support.store_contract import Pipeline

# == CleanupExecutions and UploadRequeue: Step Functions and SQS ========================================


def test_given_a_cleanup_when_started_twice_under_one_name_then_one_execution_and_new_names_start_new_ones(
    pipeline: Pipeline,
) -> None:
    pipeline.executions.start("cl_1", "cl_1")
    pipeline.executions.start("cl_1", "cl_1")
    pipeline.executions.start("cl_2", "cl_1")  # the name is taken: counts as started, changes nothing

    assert pipeline.started() == {"cl_1": "cl_1"}
    pipeline.executions.start("cl_1", "cl_1-2")
    assert pipeline.started() == {"cl_1": "cl_1", "cl_1-2": "cl_1"}


def test_given_an_upload_object_when_requeued_then_the_ingest_reads_exactly_its_key(pipeline: Pipeline) -> None:
    pipeline.requeue.requeue("uploads/kb_1/up_1")

    assert pipeline.requeued() == ["uploads/kb_1/up_1"]
