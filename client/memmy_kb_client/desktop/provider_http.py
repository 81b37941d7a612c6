"""The desktop's HTTP calls to the cloud's login configuration and to the identity provider: one httpx
client for all of them (no proxy from the environment, no redirect followed), every answer a JSON object
of at most 256 KB, and what went wrong told apart: unreachable (or 5xx, worth trying again), refused with
an OAuth error, or an answer that is not one (docs/desktop.md, "Signing in"). No message carries a token."""

from __future__ import annotations

import json
import threading
from typing import Any, Final

from memmy_kb_client.desktop.id_token import LoginError

MAX_ANSWER_BYTES: Final = 256 * 1024


class ProviderUnreachable(LoginError):
    """The cloud or the provider did not answer (or answered 5xx): worth trying again later."""


class ProviderRefused(LoginError):
    """The token endpoint answered an OAuth error (``code`` is its ``error``)."""


_shared: list[Any] = []
_shared_lock = threading.Lock()


def shared_client() -> Any:
    """One httpx client for every call to the cloud's login configuration and the provider, made on first
    use (making one costs more than a loopback sign-in's every request together)."""
    with _shared_lock:
        if not _shared:
            import httpx

            # Never a proxy from the environment: the provider is reached directly, or not at all.
            _shared.append(httpx.Client(trust_env=False, follow_redirects=False))
        return _shared[0]


def _json(response: Any, what: str) -> dict[str, Any]:
    raw = response.content[: MAX_ANSWER_BYTES + 1]
    if len(raw) > MAX_ANSWER_BYTES:
        raise LoginError("bad_answer", f"{what} answered more than {MAX_ANSWER_BYTES} bytes")
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise LoginError("bad_answer", f"{what} answered HTTP {response.status_code} without a JSON object")
    return value


def get_json(url: str, what: str, timeout: float) -> dict[str, Any]:
    import httpx

    try:
        response = shared_client().get(url, headers={"Accept": "application/json"}, timeout=timeout)
    except httpx.HTTPError as err:
        raise ProviderUnreachable("unreachable", f"{what} did not answer ({type(err).__name__})") from None
    if response.status_code >= 500:
        raise ProviderUnreachable("unreachable", f"{what} answered HTTP {response.status_code}")
    if response.status_code != 200:
        raise LoginError("bad_answer", f"{what} answered HTTP {response.status_code}")
    return _json(response, what)


def post_form(url: str, form: dict[str, str], what: str, timeout: float) -> dict[str, Any]:
    """A form POST to a provider endpoint; its JSON, or ``ProviderRefused`` for an OAuth error."""
    import httpx

    try:
        response = shared_client().post(url, data=form, headers={"Accept": "application/json"}, timeout=timeout)
    except httpx.HTTPError as err:
        raise ProviderUnreachable("unreachable", f"{what} did not answer ({type(err).__name__})") from None
    if response.status_code >= 500:
        raise ProviderUnreachable("unreachable", f"{what} answered HTTP {response.status_code}")
    answer = _json(response, what)
    error = answer.get("error")
    if isinstance(error, str) and error:
        description = answer.get("error_description")
        detail = f": {description[:200]}" if isinstance(description, str) and description else ""
        raise ProviderRefused(error[:64], f"{what} refused ({error[:64]}){detail}")
    if response.status_code != 200:
        raise LoginError("bad_answer", f"{what} answered HTTP {response.status_code}")
    return answer
