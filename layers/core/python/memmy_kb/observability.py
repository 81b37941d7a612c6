"""The functions' Logger, Tracer and Metrics, configured by POWERTOOLS_* variables in the template.

The Tracer is built on first use: creating one imports and patches the X-Ray SDK (about 0.1 s of a cold
start here), which the recall function, on the path of every agent turn, does without.
``from memmy_kb.observability import tracer`` works as before.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools import Logger, Metrics

if TYPE_CHECKING:
    from aws_lambda_powertools import Tracer

logger = Logger()
metrics = Metrics()


@cache
def get_tracer() -> Tracer:
    """The functions' Tracer, created (and the X-Ray SDK imported) on the first call."""
    from aws_lambda_powertools import Tracer

    return Tracer()


def __getattr__(name: str) -> Any:
    if name == "tracer":
        return get_tracer()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
