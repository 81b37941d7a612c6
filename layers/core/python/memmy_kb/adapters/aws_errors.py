"""Which AWS failures are transient, and their translation into the domain's ``StoreUnavailable``.

Every AWS adapter (the table, the bucket, the state machine, the queue) reaches its service through a
low-level client wrapped in ``TranslatedClient``: a call that is throttled, answered with a 5xx, or never
answered (a connection or read timeout, a connection closed mid-response) raises ``StoreUnavailable``,
which the domain can catch without knowing botocore. By then botocore's standard retries have already
been spent on it. Every other failure is left as botocore raised it: an adapter still reads the codes that
are answers (a failed condition, a missing object), and a bug or a misconfiguration (access denied, a
malformed request, no credentials) surfaces as a 500 instead of being retried.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from botocore.exceptions import ClientError, HTTPClientError, IncompleteReadError
from botocore.exceptions import ConnectionError as BotoConnectionError

from memmy_kb.domain.storage import StoreUnavailable

# Throttling, by service: DynamoDB, S3 ("SlowDown"), Step Functions and SQS; the union botocore retries.
THROTTLING_CODES: Final = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottled",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "SlowDown",
    }
)
# The service failed or timed out on its side (S3 answers a HEAD's 5xx with the bare status as its code).
SERVER_CODES: Final = frozenset(
    {
        "InternalError",
        "InternalServerError",
        "InternalFailure",
        "InternalServerException",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "ServiceUnavailableError",
        "RequestTimeout",
        "RequestTimeoutException",
        "PriorRequestNotComplete",
    }
)
# A cancelled DynamoDB transaction's per-item reasons that mean throttling.
THROTTLING_REASONS: Final = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
# No answer, or half of one: botocore's connection and read failures (timeouts included).
_UNANSWERED: Final = (BotoConnectionError, HTTPClientError, IncompleteReadError)


def error_code(err: ClientError) -> str:
    return str(err.response.get("Error", {}).get("Code", ""))


def is_transient(err: Exception) -> bool:
    """True for a throttled, 5xx or unanswered AWS call: it says nothing about the data or the request."""
    if isinstance(err, _UNANSWERED):
        return True
    if not isinstance(err, ClientError):
        return False
    code = error_code(err)
    status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code in THROTTLING_CODES or code in SERVER_CODES or code.startswith("5") or code == "429":
        return True
    if isinstance(status, int) and (status >= 500 or status == 429):
        return True
    if code == "TransactionCanceledException":
        reasons = err.response.get("CancellationReasons", [])
        return any(str(reason.get("Code")) in THROTTLING_REASONS for reason in reasons)
    return False


def unavailable(service: str, err: Exception) -> StoreUnavailable:
    """The domain's error for a transient ``err`` of ``service``."""
    reason = error_code(err) if isinstance(err, ClientError) else type(err).__name__
    return StoreUnavailable(service, reason)


@contextmanager
def translated(service: str) -> Iterator[None]:
    """Raise ``StoreUnavailable`` for a transient AWS failure inside the block, anything else as it is."""
    try:
        yield
    except (ClientError, *_UNANSWERED) as err:
        if is_transient(err):
            raise unavailable(service, err) from err
        raise


class TranslatedClient:
    """A low-level boto3 client whose calls raise ``StoreUnavailable`` for transient failures.

    Attributes that are not calls (``meta``, ``exceptions``) are the client's own, so a Stubber attached
    to the wrapped client (or to this one) sees every call. A paginator's pages are fetched by the wrapped
    client, untranslated: the adapters page by hand.
    """

    def __init__(self, client: Any, service: str) -> None:
        self.wrapped = client
        self.service = service

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.wrapped, name)
        if not callable(attribute) or name.startswith("_"):
            return attribute
        return self._translating(attribute)

    def _translating(self, call: Callable[..., Any]) -> Callable[..., Any]:
        def translated_call(*args: Any, **kwargs: Any) -> Any:
            with translated(self.service):
                return call(*args, **kwargs)

        return translated_call
