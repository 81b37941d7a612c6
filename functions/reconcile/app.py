"""Schedule (EventBridge Scheduler): one bounded reconciliation pass (memmy_kb.domain.reconcile.repair)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.composition import (
    get_backend_slots,
    get_cleanup_executions,
    get_cleanup_store,
    get_content_store,
    get_create_intents,
    get_fingerprint_store,
    get_kb_capacity,
    get_kb_store,
    get_memos_client,
    get_upload_requeue,
    get_upload_storage,
)
from memmy_kb.domain.reconcile.repair import Reconciler
from memmy_kb.invocation_deadline import bounded_by, seconds_left
from memmy_kb.observability import logger, metrics, put_backend_metrics
from memmy_kb.settings import get_settings


@logger.inject_lambda_context
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, int]:
    settings = get_settings()
    reconciler = Reconciler(
        get_kb_store(),
        get_content_store(),
        get_cleanup_store(),
        get_create_intents(),
        get_cleanup_executions(),
        get_upload_requeue(),
        get_memos_client(),
        get_upload_storage(),
        get_backend_slots(),
        time_left=seconds_left,
        capacity=get_kb_capacity(),
        activity_retention_days=settings.activity_retention_days,
        prints=get_fingerprint_store(),
    )
    with bounded_by(context):
        report = reconciler.run()
    for name, value in report.counts.items():
        metrics.add_metric(name=name, unit=MetricUnit.Count, value=value)
    # Capacity (docs/memos.md, "Backends"): per backend, and the open backends together (alarmed).
    put_backend_metrics("MemosBackendKbsUsed", report.backend_used)
    put_backend_metrics("MemosBackendKbsMax", report.backend_max)
    if report.capacity_used_percent is not None:
        metrics.add_metric(
            name="MemosKbCapacityUsedPercent", unit=MetricUnit.Percent, value=report.capacity_used_percent
        )
    return report.counts
