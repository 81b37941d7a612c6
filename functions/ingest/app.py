"""SQS (S3 ObjectCreated under uploads/) -> verify each object, submit it to MemOS, record the file.

Partial batch failures: a record whose outcome must wait (MemOS unavailable, object replaced while read)
is reported failed and comes back after the visibility timeout; after maxReceiveCount it lands in the DLQ.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.batch.types import PartialItemFailureResponse
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from memmy_kb.api.events import object_keys
from memmy_kb.composition import (
    get_content_store,
    get_fingerprint_store,
    get_kb_capacity,
    get_kb_store,
    get_memos_client,
    get_upload_storage,
)
from memmy_kb.domain.uploads import delivery, ingest
from memmy_kb.invocation_deadline import bounded_by
from memmy_kb.observability import logger, metrics
from memmy_kb.settings import get_settings

processor = BatchProcessor(event_type=EventType.SQS)
METRICS = {
    "submitted": "UploadSubmitted",
    "rejected": "UploadRejected",
    "ignored": "UploadEventIgnored",
    "unknown": "UploadOutcomeUnknown",
}


def handle_record(record: SQSRecord) -> None:
    settings = get_settings()
    config = ingest.IngestConfig(
        inline_max_bytes=settings.inline_upload_max_bytes,
        get_url_ttl_seconds=settings.upload_get_ttl_seconds,
        final_attempt=int(record.attributes.approximate_receive_count or 1) >= settings.ingest_max_receives,
        capacity=get_kb_capacity(),
        activity_retention_days=settings.activity_retention_days,
    )
    try:
        for key in object_keys(record.body):
            outcome = delivery.ingest_object(
                get_kb_store(),
                get_content_store(),
                get_upload_storage(),
                get_memos_client(),
                key,
                config=config,
                prints=get_fingerprint_store(),
            )
            metrics.add_metric(name=METRICS[outcome.result], unit=MetricUnit.Count, value=1)
    except ingest.RetryLater as err:
        logger.warning("ingest deferred; the message will come back", extra={"why": str(err)})
        raise
    except Exception:
        logger.exception("ingest failed; the message will come back", extra={"message_id": record.message_id})
        raise


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> PartialItemFailureResponse:
    with bounded_by(context):
        return process_partial_response(
            event=event, record_handler=handle_record, processor=processor, context=context
        )
