"""The event edge: what the S3 -> SQS notifications that feed the ingest carry."""

from __future__ import annotations

import json
from urllib.parse import unquote_plus


def object_keys(message_body: str) -> list[str]:
    """The decoded keys of the ``ObjectCreated`` records in one SQS message body from S3.

    S3's ``s3:TestEvent`` (sent when the notification is configured) has no records. Keys arrive
    URL-encoded (moto even encodes ``/``), so each is decoded with ``unquote_plus``. Raises ValueError
    for a body that is not an S3 notification (such a message should end in the DLQ, not vanish).
    """
    from aws_lambda_powertools.utilities.data_classes import S3Event

    try:
        payload = json.loads(message_body)
    except json.JSONDecodeError as err:
        raise ValueError("message body is not JSON") from err
    if not isinstance(payload, dict):
        raise ValueError("message body is not an S3 notification")
    if payload.get("Event") == "s3:TestEvent":
        return []
    if not isinstance(payload.get("Records"), list):
        raise ValueError("message body is not an S3 notification")
    return [
        unquote_plus(record.s3.get_object.key)
        for record in S3Event(payload).records
        if record.event_name.startswith("ObjectCreated")
    ]
