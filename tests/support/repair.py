"""Repair through the ``service`` fixture's adapters: the reconciler with its clock moved past every grace
period, and an upload queue emptied."""

from __future__ import annotations

from datetime import timedelta

from memmy_kb import composition as deps
from memmy_kb.domain.reconcile.repair import Reconciler
from memmy_kb.records import utc_now
from tests.support.aws import Service
from tests.support.uploads import sqs

LATER = timedelta(hours=1)


def reconciler(service: Service, *, later: timedelta = LATER) -> Reconciler:
    """The reconciler on the service's adapters, with its clock moved ``later`` (past every grace)."""
    return Reconciler(
        deps.get_kb_store(),
        deps.get_content_store(),
        deps.get_cleanup_store(),
        deps.get_create_intents(),
        deps.get_cleanup_executions(),
        deps.get_upload_requeue(),
        deps.get_memos_client(),
        deps.get_upload_storage(),
        deps.get_backend_slots(),
        capacity=deps.get_kb_capacity(),
        activity_retention_days=180,
        clock=lambda: utc_now() + later,
    )


def drop_queued_events(service: Service) -> None:
    """Forget every message on the upload queue, as if the ingest had taken them all."""
    client = sqs(service)
    while messages := client.receive_message(
        QueueUrl=service.refs["UploadQueue"], MaxNumberOfMessages=10
    ).get("Messages", []):
        for message in messages:
            client.delete_message(
                QueueUrl=service.refs["UploadQueue"], ReceiptHandle=message["ReceiptHandle"]
            )
