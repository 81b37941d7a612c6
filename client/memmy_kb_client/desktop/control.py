"""How the ``memmy-kb desktop`` commands reach the running service: its port from ``service.json`` in the
state directory, the control token from where that file says the service put it (the OS keychain, else
``desktop-private/control-token``)."""

from __future__ import annotations

import http.client
import json
from typing import Any

from memmy_kb_client.desktop import paths
from memmy_kb_client.desktop.credentials import read_control_token


class ServiceUnavailable(Exception):
    """No running service answered; the message says what to do."""


class ControlError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{message} ({status} {code})")
        self.status, self.code, self.message = status, code, message


def call(
    state_dir: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    *,
    timeout: float = 10.0,
    keyring_backend: Any = None,
) -> dict[str, Any]:
    """One control request to the service recorded in ``state_dir``; its JSON answer."""
    recorded = paths.read_service(state_dir)
    token = None
    if recorded is not None:
        kind = str(recorded.get("control_token_store") or "file")
        token = read_control_token(state_dir, kind, keyring_backend)
    if recorded is None or token is None:
        raise ServiceUnavailable(
            f"no desktop service is running for {state_dir}: start it with `memmy-kb desktop serve`"
        )
    port = int(str(recorded["port"]))
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    payload = None
    if body is not None:
        payload = json.dumps(body).encode("utf-8")
        headers["Content-Type"] = "application/json"
    try:
        connection.request(method, path, body=payload, headers=headers)
        response = connection.getresponse()
        data = response.read()
    except OSError as err:
        raise ServiceUnavailable(
            f"the desktop service recorded at 127.0.0.1:{port} does not answer ({err}); "
            "start it with `memmy-kb desktop serve`"
        ) from err
    finally:
        connection.close()
    try:
        answer = json.loads(data)
    except ValueError:
        answer = {}
    if not isinstance(answer, dict):
        answer = {}
    if response.status >= 400:
        error = answer.get("error") or {}
        raise ControlError(response.status, str(error.get("code", "error")), str(error.get("message", "")))
    return answer
