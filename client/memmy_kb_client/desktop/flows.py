"""The sign-ins under way, browser or device (RFC 8628), one at a time: a flow is ``pending``, then
``done``, ``failed``, ``expired`` or ``cancelled``, and its tokens are kept only once the ID token passed
every check (docs/desktop.md, "Signing in")."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from memmy_kb_client.desktop import oidc
from memmy_kb_client.home.credentials import CloudLogin

BROWSER_FLOW_SECONDS: Final = 600.0
DEVICE_DEFAULT_INTERVAL: Final = 5.0
SLOW_DOWN_SECONDS: Final = 5.0
MAX_FLOWS: Final = 16
# Why a flow was cancelled, as ``desktop login`` prints it.
SUPERSEDED: Final = "a newer sign-in started (only the latest one counts): finish that one"
REPLACED: Final = "another sign-in finished first, so this one was cancelled"
LOGGED_OUT: Final = "the service was logged out (`memmy-kb desktop logout` or the page's Sign out)"
_LIVE: Final = ("pending", "exchanging")

logger = logging.getLogger("memmy_kb_client.desktop")


@dataclass
class Flow:
    id: str
    mode: str
    provider: oidc.Provider
    expires_at: float  # time.monotonic()
    request: oidc.BrowserRequest | None = None
    device: dict[str, Any] = field(default_factory=dict)
    state: str = "pending"
    error: str = ""
    # Set when the flow ends by cancellation or the service's stop: a device poller wakes up and leaves.
    ended: threading.Event = field(default_factory=threading.Event)
    # The page's language when the page started it (``en``, ``zh``), for the pages its callback shows.
    lang: str = ""

    def expires_in(self, now: float) -> int:
        return max(0, int(self.expires_at - now))


class LoginFlows:
    """The flows under way; ``complete`` keeps a login once a flow has one."""

    def __init__(
        self,
        complete: Callable[[CloudLogin], None],
        clock: Callable[[], float],
        timeout: float = 10.0,
        wait: Callable[[float], bool] | None = None,
        login_lock: threading.RLock | None = None,
    ) -> None:
        self._complete = complete
        self._clock = clock  # the wall clock the tokens' exp is read against
        self._timeout = timeout
        self._lock = threading.Lock()
        # Taken before ``_lock`` whenever a flow completes or flows are cancelled.
        self._login_lock = login_lock or threading.RLock()
        self._flows: dict[str, Flow] = {}
        self._stop = threading.Event()
        self._wait = wait

    def _add(self, flow: Flow) -> Flow:
        with self._login_lock, self._lock:
            self._cancel(SUPERSEDED)
            while len(self._flows) >= MAX_FLOWS:
                self._flows.pop(next(iter(self._flows)))  # the oldest, ended: no one asks any more
            self._flows[flow.id] = flow
        return flow

    @staticmethod
    def _end(flow: Flow, state: str, error: str = "") -> None:
        if flow.state in _LIVE:
            flow.state, flow.error = state, error
            if state == "cancelled":
                flow.ended.set()

    def _cancel(self, why: str) -> None:
        for flow in self._flows.values():
            self._end(flow, "cancelled", why)

    def cancel_pending(self, why: str) -> None:
        """Cancel every flow still pending or exchanging its code (a login was kept, or a logout)."""
        with self._login_lock, self._lock:
            self._cancel(why)

    def _keep(self, flow: Flow, login: CloudLogin) -> bool:
        """Keep ``login`` for ``flow`` unless a newer sign-in or a logout cancelled the flow first; its
        tokens are then revoked (best effort). Atomic with ``cancel_pending`` and ``_add``."""
        with self._login_lock:
            with self._lock:
                live = flow.state in _LIVE
                if live:
                    flow.state = "keeping"  # not live: ``complete`` cancels every other flow, not this one
            if live:
                try:
                    self._complete(login)
                except BaseException:
                    self._settle(flow, "failed", "the login could not be kept", ending="keeping")
                    raise
                self._settle(flow, "done", ending="keeping")
                return True
        oidc.revoke(login, timeout=min(self._timeout, 5.0))
        return False

    def start_browser(self, provider: oidc.Provider, redirect_uri: str, lang: str = "") -> Flow:
        request = oidc.browser_request(provider, redirect_uri)
        flow = Flow(
            secrets.token_urlsafe(16),
            "browser",
            provider,
            time.monotonic() + BROWSER_FLOW_SECONDS,
            request,
            lang=lang,
        )
        return self._add(flow)

    def start_device(self, provider: oidc.Provider) -> Flow:
        answer = oidc.device_authorization(provider, self._timeout)
        lifetime = _seconds(answer.get("expires_in"), 600.0)
        flow = Flow(secrets.token_urlsafe(16), "device", provider, time.monotonic() + lifetime, device=answer)
        self._add(flow)
        threading.Thread(target=self._poll, args=(flow,), name="memmy-kb-device-login", daemon=True).start()
        return flow

    def get(self, flow_id: str) -> Flow | None:
        with self._lock:
            flow = self._flows.get(flow_id)
            if (
                flow is not None
                and flow.state in ("pending", "exchanging")
                and time.monotonic() >= flow.expires_at
            ):
                self._end(flow, "expired", "the sign-in was not finished in time")
            return flow

    def claim_by_state(self, state: str) -> Flow | None:
        """The pending browser flow whose ``state`` this is, taken off the table (a state works once).
        The flow is returned ``cancelled`` when a newer sign-in or a logout cancelled it, ``expired`` when
        it was not finished in time: refused too, with a page that says which."""
        offered = state.encode("utf-8", "replace")
        with self._lock:
            found = None
            for flow in self._flows.values():
                if flow.request is not None and secrets.compare_digest(flow.request.state.encode(), offered):
                    found = flow
            if found is not None and found.state == "pending" and time.monotonic() >= found.expires_at:
                self._end(found, "expired", "the sign-in was not finished in time")
            if found is not None and found.state in ("cancelled", "expired"):
                return found
            if found is None or found.state != "pending":
                return None
            found.state = "exchanging"
            return found

    def finish_browser(self, flow: Flow, code: str | None, error: str | None) -> CloudLogin | None:
        """The callback's answer for a claimed flow: the code exchanged and the login kept, or why not."""
        assert flow.request is not None
        if error or not code:
            self._settle(flow, "failed", f"the provider answered {error or 'no code'}")
            return None
        try:
            login = oidc.exchange_code(flow.provider, flow.request, code, self._clock(), self._timeout)
        except oidc.LoginError as err:
            self._settle(flow, "failed", err.message)
            return None
        except Exception as err:  # anything else: the flow fails rather than hang
            logger.exception("desktop service: exchanging the sign-in's code failed")
            self._settle(flow, "failed", f"the sign-in failed ({type(err).__name__})")
            return None
        return login if self._keep(flow, login) else None

    def _settle(self, flow: Flow, state: str, error: str = "", *, ending: str = "") -> None:
        """End ``flow`` as ``state`` unless it ended already (a cancellation stands); ``ending``: a
        state it may be in besides pending and exchanging."""
        with self._lock:
            if flow.state == ending:
                flow.state, flow.error = state, error
            else:
                self._end(flow, state, error)

    def _poll(self, flow: Flow) -> None:
        try:
            self._poll_until_done(flow)
        except Exception as err:  # the thread ends; the flow fails rather than hang
            logger.exception("desktop service: the device sign-in failed")
            self._settle(flow, "failed", f"the sign-in failed ({type(err).__name__})")

    def _poll_until_done(self, flow: Flow) -> None:
        interval = _seconds(flow.device.get("interval"), DEVICE_DEFAULT_INTERVAL)
        device_code = str(flow.device["device_code"])
        wait = self._wait

        def wait_or_end(seconds: float) -> bool:
            ended = wait(seconds) if wait is not None else flow.ended.wait(seconds)
            return ended or flow.ended.is_set() or self._stop.is_set()

        outcome = poll_device(
            lambda: oidc.device_token(flow.provider, device_code, self._timeout),
            interval,
            flow.expires_at,
            wait_or_end,
            time.monotonic,
        )
        if self._stop.is_set():
            return
        # Tokens that came after a cancellation still go through ``_keep``: refused there, and revoked.
        if isinstance(outcome, dict):
            try:
                login = oidc.login_from_tokens(
                    flow.provider, outcome, self._clock(), nonce=None, timeout=self._timeout
                )
            except oidc.LoginError as err:
                self._settle(flow, "failed", err.message)
                return
            self._keep(flow, login)
        else:
            state, error = outcome
            self._settle(flow, state, error)

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            for flow in self._flows.values():
                self._end(flow, "failed", "the desktop service stopped")
                flow.ended.set()


def poll_device(
    ask: Callable[[], dict[str, Any]],
    interval: float,
    deadline: float,
    wait: Callable[[float], bool],
    clock: Callable[[], float],
) -> dict[str, Any] | tuple[str, str]:
    """Ask the token endpoint every ``interval`` seconds (``slow_down`` adds 5 s) until it gives tokens
    (returned) or ends the flow: ``("expired", why)`` or ``("failed", why)``. ``wait`` returning True
    means stop."""
    while True:
        if wait(interval):
            return "failed", "the desktop service stopped"
        if clock() >= deadline:
            return "expired", "the code expired before the sign-in was finished"
        try:
            return ask()
        except oidc.ProviderRefused as err:
            if err.code == "authorization_pending":
                continue
            if err.code == "slow_down":
                interval += SLOW_DOWN_SECONDS
                continue
            if err.code == "expired_token":
                return "expired", "the code expired before the sign-in was finished"
            return "failed", err.message
        except oidc.ProviderUnreachable:
            continue  # the network came and went: ask again at the next interval
        except oidc.LoginError as err:
            return "failed", err.message


def _seconds(value: object, default: float) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return float(value)
    return default
