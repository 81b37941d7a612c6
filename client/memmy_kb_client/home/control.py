"""The control client: how the ``memmy-kb desktop`` commands reach the running service, with the control
token and the port from the record the service keeps beside it (``credentials.read_service_record``),
never from ``desktop/service.json``; the listener proves itself first (``proven``). docs/desktop.md,
"The service proves itself"."""

from __future__ import annotations

from typing import Any

from memmy_kb_client.home import advice, proof
from memmy_kb_client.home.credentials import read_service_record
from memmy_kb_client.home.proof import NotProven
from memmy_kb_client.home.proven import ProvenConnection
from memmy_kb_client.http_client import OK, classify

CONTROL_TOKEN = "control token"  # noqa: S105 - what the listener must prove it holds, not a secret
# Where the commands reach the cloud through the service: the cloud's own path follows (``proxy``).
CLOUD_PREFIX = "/control/cloud"


class ServiceUnavailable(Exception):
    """No running service answered; the message says what to do."""


class NotThisService(ServiceUnavailable):
    """Something listens where the service was recorded, but it could not prove it is the service."""


class ControlError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status, self.code, self.message = status, code, message


def _not_answering(state_dir: str, port: int, err: Exception) -> ServiceUnavailable:
    return ServiceUnavailable(
        f"the desktop service recorded at 127.0.0.1:{port} does not answer ({err}); "
        f"{advice.how_to_start(state_dir)}"
    )


def call(
    state_dir: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    timeout: float = 10.0,
    keyring_backend: Any = None,
) -> dict[str, Any]:
    """One control request to the service recorded for ``state_dir``, once it has proven itself; its
    JSON answer. ``NotThisService`` when the listener cannot prove it, ``ServiceUnavailable`` when
    nothing answers, ``ControlError`` for the service's refusal."""
    record = read_service_record(state_dir, keyring_backend)
    start = advice.how_to_start(state_dir)
    if record is None:
        raise ServiceUnavailable(f"no desktop service is running for {state_dir}: {start}")
    connection = ProvenConnection(record.port, record.token, "control", timeout=timeout)
    try:
        try:
            connection.open()
        except OSError as err:
            raise _not_answering(state_dir, record.port, err) from err
        try:
            connection.prove(CONTROL_TOKEN, start=start)
        except NotProven as err:
            raise NotThisService(str(err)) from err
        except OSError as err:
            raise NotThisService(
                proof.refusal(record.port, f"it did not answer the challenge: {err}", start)
            ) from err
        try:
            reply = connection.request(method, path, body)
        except OSError as err:
            raise _not_answering(state_dir, record.port, err) from err
    finally:
        connection.close()
    result = classify(reply.status, reply.data)
    if result.outcome == OK and isinstance(result.answer, dict):
        return result.answer
    if result.error is not None:
        raise ControlError(result.error.status, result.error.code, result.error.message)
    return {}
