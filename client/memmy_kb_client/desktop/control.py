"""How the ``memmy-kb desktop`` commands reach the running service: the control token and the port it
listens on, from the one record the service keeps in the OS keychain or ``desktop-private/control.json``
(``credentials.read_service_record``), never from ``desktop/service.json``, which anything that can write
the hooks' directory can rewrite.

Before the control token (or a pasted cloud token) goes out, the listener proves that it holds the
control token (``proof``: a fresh nonce, answered with an HMAC bound to the port), on the connection that
then carries the request; a listener that cannot is refused and sent nothing more.
"""

from __future__ import annotations

import http.client
import json
from typing import Any

from memmy_kb_client.desktop import advice, proof
from memmy_kb_client.desktop.credentials import ServiceRecord, read_service_record


class ServiceUnavailable(Exception):
    """No running service answered; the message says what to do."""


class NotThisService(ServiceUnavailable):
    """Something listens where the service was recorded, but it could not prove it is the service."""


class ControlError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status, self.code, self.message = status, code, message


def _answer(response: http.client.HTTPResponse) -> tuple[dict[str, Any], bytes]:
    data = response.read()
    try:
        answer = json.loads(data)
    except ValueError:
        answer = {}
    return (answer if isinstance(answer, dict) else {}), data


def _not_answering(state_dir: str, record: ServiceRecord, err: Exception) -> ServiceUnavailable:
    return ServiceUnavailable(
        f"the desktop service recorded at 127.0.0.1:{record.port} does not answer ({err}); "
        f"{advice.how_to_start(state_dir)}"
    )


def _prove(connection: http.client.HTTPConnection, record: ServiceRecord, state_dir: str) -> None:
    """The listener proves it holds the control token, or ``NotThisService``; nothing secret is sent."""
    nonce = proof.new_nonce()
    try:
        connection.connect()
    except OSError as err:
        raise _not_answering(state_dir, record, err) from err

    def refused(what: str) -> NotThisService:
        return NotThisService(proof.refusal(record.port, what, advice.how_to_start(state_dir)))

    try:
        connection.request("GET", proof.target("control", nonce), headers={"Accept": "application/json"})
        response = connection.getresponse()
        answer, _ = _answer(response)
    except (OSError, http.client.HTTPException) as err:
        raise refused(f"it did not answer the challenge: {err}") from err
    if response.status != 200 or not proof.verified(
        record.token, "control", nonce, record.port, answer.get("proof")
    ):
        raise refused("it did not prove it holds the control token")
    if connection.sock is None:  # it closed the connection: a new one could reach someone else
        raise refused("it closed the connection after the proof")
    connection.auto_open = 0  # never reconnect behind our back after the proof


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
    if record is None:
        raise ServiceUnavailable(f"no desktop service is running for {state_dir}: {advice.how_to_start(state_dir)}")
    connection = http.client.HTTPConnection("127.0.0.1", record.port, timeout=timeout)
    headers = {"Authorization": f"Bearer {record.token}", "Accept": "application/json"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    try:
        _prove(connection, record, state_dir)
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        answer, _ = _answer(response)
    except (OSError, http.client.HTTPException) as err:
        raise _not_answering(state_dir, record, err) from err
    finally:
        connection.close()
    if response.status >= 400:
        error = answer.get("error") or {}
        raise ControlError(response.status, str(error.get("code", "error")), str(error.get("message", "")))
    return answer
