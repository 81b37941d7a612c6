"""Step Functions task: one bounded round of a cleanup, removing a delete's leftovers from MemOS, S3 and the table.

Input ``{"cleanup_id": ...}``; output ``{"done": bool}`` (the state machine calls again until done).
``CleanupRetryable`` is the error the state machine's Retry names; anything else fails the execution.
"""

from __future__ import annotations

from typing import Any

from memmy_kb.composition import (
    get_backend_slots,
    get_cleanup_store,
    get_content_store,
    get_fingerprint_store,
    get_memos_client,
    get_team_store,
    get_upload_storage,
)
from memmy_kb.domain.deletion.cleanup import Cleaner
from memmy_kb.invocation_deadline import bounded_by, seconds_left
from memmy_kb.observability import logger


@logger.inject_lambda_context
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, bool]:
    cleanup_id = str(event["cleanup_id"])
    logger.append_keys(cleanup_id=cleanup_id)
    cleaner = Cleaner(
        get_cleanup_store(),
        get_content_store(),
        get_memos_client(),
        get_upload_storage(),
        get_backend_slots(),
        time_left=seconds_left,
        prints=get_fingerprint_store(),
        teams=get_team_store(),
    )
    with bounded_by(context):
        return {"done": cleaner.run(cleanup_id)}
