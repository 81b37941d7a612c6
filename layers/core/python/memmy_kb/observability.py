"""The functions' Logger and Metrics, configured by POWERTOOLS_* variables in the template.

There is no Tracer: the template's ``Tracing: Active`` has Lambda trace every invocation without the
X-Ray SDK, whose import and patching cost more of a cold start than ``import boto3`` does here
(docs/architecture.md, "The core layer").
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, TypeVar, overload

from aws_lambda_powertools import Logger, Metrics

# Libraries that log what must never reach a log when their level is DEBUG (or INFO): botocore request
# and response bodies (GetSecretValue's answer holds the MemOS key, DynamoDB items hold emails and phones),
# SigV4 canonical requests and presigning (the session token, signatures); urllib3, httpx and httpcore
# URLs and headers; the X-Ray SDK whole segment documents. Lambda's advanced logging controls set the
# *root* logger to ApplicationLogLevel, which these loggers inherit unless they have a level of their
# own: pinned here, at the import every function makes first, whatever the root's level. A level, not a
# redacting filter: no pattern recognises a recall query, an excerpt or a file's text, and a filter on
# a logger does not see its children's records. tests/integration/logs/test_log_hygiene.py runs the seed
# story at DEBUG and searches every line.
QUIET_LIBRARY_LOGGERS: Final = {
    "botocore": logging.WARNING,
    "boto3": logging.WARNING,
    "s3transfer": logging.WARNING,
    "urllib3": logging.WARNING,
    "httpcore": logging.WARNING,
    "aws_xray_sdk": logging.WARNING,
    # One line per request at INFO (method, URL, status): MemOS URLs carry no query string and the key
    # travels in a header, which only DEBUG shows.
    "httpx": logging.INFO,
}

_Handler = TypeVar("_Handler", bound=Callable[..., Any])


def quiet_library_loggers() -> None:
    """Set the libraries' loggers (and so their children) above the levels that show bodies and headers."""
    for name, level in QUIET_LIBRARY_LOGGERS.items():
        logging.getLogger(name).setLevel(level)


class _Logger(Logger):
    """Powertools' Logger whose ``inject_lambda_context`` never logs the event, whatever ``log_event`` or
    ``POWERTOOLS_LOGGER_LOG_EVENT`` say: an HTTP API event carries the caller's bearer token in its headers
    and queries, phones, emails or file names in its body."""

    @overload
    def inject_lambda_context(
        self,
        lambda_handler: _Handler,
        log_event: bool | None = None,
        correlation_id_path: str | None = None,
        clear_state: bool | None = False,
        flush_buffer_on_uncaught_error: bool = False,
    ) -> _Handler: ...

    @overload
    def inject_lambda_context(
        self,
        lambda_handler: None = None,
        log_event: bool | None = None,
        correlation_id_path: str | None = None,
        clear_state: bool | None = False,
        flush_buffer_on_uncaught_error: bool = False,
    ) -> Callable[[_Handler], _Handler]: ...

    def inject_lambda_context(
        self,
        lambda_handler: _Handler | None = None,
        log_event: bool | None = None,
        correlation_id_path: str | None = None,
        clear_state: bool | None = False,
        flush_buffer_on_uncaught_error: bool = False,
    ) -> Any:
        return super().inject_lambda_context(
            lambda_handler,
            log_event=False,
            correlation_id_path=correlation_id_path,
            clear_state=clear_state,
            flush_buffer_on_uncaught_error=flush_buffer_on_uncaught_error,
        )


quiet_library_loggers()

logger = _Logger()
metrics = Metrics()
_muted = False


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """No log line at INFO or below and no metric while inside, and none of its metrics left buffered: a
    request the function makes to itself (SnapStart's priming, ``memmy_kb.api.priming``) is no traffic."""
    global _muted
    logging.disable(logging.INFO)
    _muted = True
    try:
        yield
    finally:
        _muted = False
        logging.disable(logging.NOTSET)
        metrics.clear_metrics()


def put_backend_metrics(name: str, values: Mapping[str, float], unit: str = "Count") -> None:
    """``name`` once per MemOS backend, with the dimension ``Backend`` (capacity per backend; docs/memos.md).

    Each is its own EMF line (Powertools' ``single_metric``): the function's ``metrics`` carry one set of
    dimensions for all their metrics, and these need one per backend.
    """
    from aws_lambda_powertools.metrics import MetricUnit, single_metric

    if _muted:
        return
    for backend, value in values.items():
        with single_metric(name=name, unit=MetricUnit(unit), value=value) as metric:
            metric.add_dimension(name="Backend", value=backend)
