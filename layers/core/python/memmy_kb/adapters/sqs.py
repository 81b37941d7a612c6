"""The upload queue as the reconciler's ``UploadRequeue``: hands an object to the ingest again.

The message is the S3 ``ObjectCreated`` notification the bucket itself would send for the object, so the
ingest (``memmy_kb.api.events.object_keys``) cannot tell a requeued upload from a fresh one, and its
duplicate guard (the upload's conditional state change) applies as for any repeated event. Throttling, a 5xx or a timeout is raised as ``StoreUnavailable``
(``memmy_kb.adapters.aws_errors``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote_plus

from memmy_kb.adapters.aws_errors import TranslatedClient


class UploadQueue:
    """Sends to the upload queue through a low-level SQS client (passed in)."""

    def __init__(self, queue_url: str, bucket: str, client: Any) -> None:
        self.queue_url = queue_url
        self.bucket = bucket
        self._client = TranslatedClient(client, "queue")

    def requeue(self, object_key: str) -> None:
        record = {
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "eventName": "ObjectCreated:Post",
            "s3": {"bucket": {"name": self.bucket}, "object": {"key": quote_plus(object_key, safe="/")}},
        }
        self._client.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps({"Records": [record]}))
