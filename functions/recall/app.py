"""POST /recall: the caller's excerpts for one agent turn and the block a hook injects.

The path of every agent turn, so it imports only what it uses (no Tracer, no idempotency, Parameters
only when the MemOS key is first needed), and holds the garbage collector off until its first invocation
has returned (``memmy_kb.cold_start``). On SnapStart (template.yaml) the rest of a first recall is built
before the snapshot instead, and each restored environment made its own (``memmy_kb.api.snapstart``).
"""

from __future__ import annotations

from memmy_kb import cold_start

cold_start.hold()  # before the imports below: they are most of the cold start's objects

from typing import Any  # noqa: E402

from aws_lambda_powertools.logging import correlation_paths  # noqa: E402

from memmy_kb.api.resolver import build_resolver  # noqa: E402
from memmy_kb.api.routes import recall  # noqa: E402
from memmy_kb.api.snapstart import register  # noqa: E402
from memmy_kb.observability import logger, metrics  # noqa: E402

app = build_resolver()
app.include_router(recall.router)


def prime() -> None:
    from memmy_kb.api.priming import prime_recall

    prime_recall(app)


register(prime)


@cold_start.until_first_invocation
@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
