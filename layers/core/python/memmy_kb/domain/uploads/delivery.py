"""One S3 object delivered to the ingest: its upload found, its bytes read, its ``Ingestion`` run.

The upload's state machine is ``memmy_kb.domain.uploads.ingest``; this is the event's side of it: an object that
no upload claims, or whose upload was decided already, is a logged no-op (its bytes go when nothing will
read them), and the MemOS add goes to the KB's own backend (``memmy_kb.domain.knowledge_bases.placement``).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime

from aws_lambda_powertools import Logger

from memmy_kb.domain.engine import backend_of
from memmy_kb.domain.fingerprints.store import FingerprintStore
from memmy_kb.domain.ports.contents import ContentStore
from memmy_kb.domain.ports.engines import KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
from memmy_kb.domain.ports.uploads import UploadObjects
from memmy_kb.domain.storage import ObjectChanged, parse_upload_key
from memmy_kb.domain.uploads.ingest import IngestConfig, Ingestion, IngestOutcome, RetryLater
from memmy_kb.domain.uploads.replace_ingest import ReplacementIngestion
from memmy_kb.domain.uploads.residue import drop_upload_bytes
from memmy_kb.records import UploadRecord, utc_now

logger = Logger(child=True)


def ingest_object(
    kbs: KnowledgeBaseStore,
    contents: ContentStore,
    storage: UploadObjects,
    memos: KnowledgeEngines,
    key: str,
    *,
    config: IngestConfig,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = lambda: secrets.token_hex(12),
    prints: FingerprintStore | None = None,
) -> IngestOutcome:
    """Verify the object at ``key``, submit it to MemOS and record the file, or reject it.

    Idempotent per object: an unknown key, or an upload that is no longer pending, is a logged no-op.
    Raises RetryLater (and leaves the upload pending) when the outcome must be decided later: the object
    changed while it was read, or MemOS is unavailable and certainly stored nothing.
    """
    ids = parse_upload_key(key)
    upload = contents.get_upload(*ids) if ids else None
    if upload is None:
        if ids:  # removed with its KB (``bytes_unneeded``): nothing will ever read these bytes
            drop_upload_bytes(storage, *ids)
        logger.info("object has no upload record; ignored", extra={"object_key": key})
        return IngestOutcome(key, "ignored")
    log = {"kb_id": upload.kb_id, "upload_id": upload.upload_id}
    if upload.state in ("rejected", "expired"):
        # An earlier attempt may have recorded the rejection and died before deleting the bytes (the
        # verified copy too), or the object arrived after its upload expired.
        drop_upload_bytes(storage, upload.kb_id, upload.upload_id)
    if upload.state != "pending":
        logger.info("upload is not pending; duplicate event ignored", extra={**log, "state": upload.state})
        return IngestOutcome(key, "ignored", upload.upload_id)
    data: bytes | None = None
    if upload.size_bytes <= config.inline_max_bytes:
        # A small file is read whole by one GET, which also says its real size and ETag (no HEAD).
        read = storage.read_start(key, upload.size_bytes)
        info, data = read if read is not None else (None, None)
    else:
        info = storage.head(key)
    if info is None:
        logger.info("object is gone; ignored", extra=log)
        return IngestOutcome(key, "ignored", upload.upload_id)
    # The KB's backend, copied on the upload (an upload older than backends names none: the default).
    engine = memos.engine(backend_of(upload.memos_backend))
    ingestion = ingestion_of(upload)(
        kbs, contents, storage, engine, upload, config, clock=clock, new_id=new_id, prints=prints
    )
    try:
        return ingestion.run(info, data)
    except ObjectChanged:
        # Re-POSTed within the POST's validity: the new version's own event will follow; this one waits.
        logger.info("object replaced while it was read; retrying", extra=log)
        raise RetryLater("the object changed while it was read") from None


def ingestion_of(upload: UploadRecord) -> type[Ingestion]:
    """The run an upload gets: a new file's, or a replace's (a file's next version)."""
    return ReplacementIngestion if upload.replaces is not None else Ingestion
