"""The desktop service's state: its tokens, its cloud login and what the last recall met.

One ``DesktopState`` is shared by all request threads; a lock guards the tokens, the login and the last
recall, and is never held across a call to the cloud.
"""

from __future__ import annotations

import enum
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from memmy_kb_client.desktop import page, paths
from memmy_kb_client.desktop.block import fit_for_agent
from memmy_kb_client.desktop.cloud import CloudRecall
from memmy_kb_client.desktop.credentials import CloudLogin, FileStore, LoginStore, open_store

DEFAULT_PORT: Final = 8765
HOST: Final = "127.0.0.1"
HOOK_TOKEN_PREFIX: Final = "mkh_"  # noqa: S105 - a prefix, not a secret
CONTROL_TOKEN_PREFIX: Final = "mkc_"  # noqa: S105 - a prefix, not a secret


class Access(enum.Enum):
    """Which credential a route takes."""

    PUBLIC = "public"
    HOOK = "hook"
    CONTROL = "control"
    SESSION = "session"


@dataclass(frozen=True)
class DesktopConfig:
    state_dir: str
    cloud_url: str
    port: int = DEFAULT_PORT
    cloud_timeout: float = 3.5
    # A keyring backend to hold the cloud login (tests pass an in-memory one); None: whatever keyring finds.
    keyring_backend: Any = None
    # The wall clock the login's expiry is read against (tests pass one they move).
    clock: Callable[[], float] = time.time


def _now_iso(at: float | None = None) -> str:
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).isoformat(timespec="seconds")


def _new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


class DesktopState:
    """The service's tokens, its cloud login and what the last recall met; shared by all request threads."""

    def __init__(self, config: DesktopConfig) -> None:
        self.config = config
        self.state_dir = config.state_dir
        self.cloud = CloudRecall(config.cloud_url, timeout=config.cloud_timeout)
        self.store: LoginStore = open_store(config.state_dir, config.keyring_backend)
        self._lock = threading.Lock()
        self.hook_token = ""
        self.control_token = ""
        self.login: CloudLogin | None = None
        self.login_note = ""
        self.rejected = False
        self.last_recall: dict[str, Any] | None = None
        self.url = ""
        self.port = 0
        self.sessions = page.Sessions()

    @property
    def cookie_name(self) -> str:
        # Cookies are not kept apart by port: two services on one machine each name their own.
        return f"memmy_kb_session_{self.port}"

    # ---------------------------------------------------------------------------------------- setup

    def load(self) -> None:
        """Tokens from (or into) the state directory, and the saved cloud login if it is for our cloud."""
        self.hook_token = paths.read_token(self.state_dir, paths.HOOK_TOKEN_FILE) or self._write_hook_token()
        self.control_token = _new_token(CONTROL_TOKEN_PREFIX)
        paths.write_private(
            os.path.join(self.state_dir, paths.CONTROL_TOKEN_FILE), self.control_token.encode("ascii")
        )
        try:
            saved = self.store.load()
        except Exception as err:  # a keychain that will not answer: the file, as at login
            self.login_note = f"the OS keychain could not be read ({type(err).__name__}); using the file"
            self.store = FileStore(self.state_dir)
            saved = self.store.load()
        if saved is not None and saved.cloud != self.cloud.base_url:
            self.login_note = f"the saved login is for {saved.cloud}, not {self.cloud.base_url}: log in again"
            saved = None
        self.login = saved

    def _write_hook_token(self) -> str:
        token = _new_token(HOOK_TOKEN_PREFIX)
        paths.write_private(os.path.join(self.state_dir, paths.HOOK_TOKEN_FILE), token.encode("ascii"))
        return token

    # ------------------------------------------------------------------------------------- requests

    def credential(self, authorization: str | None) -> Access | None:
        """Which of our tokens ``Authorization: Bearer ...`` carries, compared in constant time."""
        scheme, _, value = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            return None
        offered = value.strip().encode("utf-8", "replace")
        with self._lock:
            hook, control = self.hook_token.encode(), self.control_token.encode()
        # Both comparisons run every time, so the timing does not say which token was near.
        is_hook = secrets.compare_digest(offered, hook)
        is_control = secrets.compare_digest(offered, control)
        if is_hook:
            return Access.HOOK
        if is_control:
            return Access.CONTROL
        return None

    def recall(self, query: str, agent: str | None) -> tuple[str, str, float | None]:
        """The block for ``query`` cut for ``agent``, the outcome, and the cloud call's seconds."""
        with self._lock:
            login = self.login
        if login is None:
            return "", "logged_out", None
        if login.expired(self.config.clock()):
            self._record("expired", None, None)
            return "", "expired", None
        reply = self.cloud.recall(login.token, query)
        with self._lock:
            if self.login is login:
                self.rejected = reply.outcome == "unauthorized"
        self._record(reply.outcome, reply.status, reply.elapsed, reply.detail)
        if reply.outcome != "ok":
            return "", reply.outcome, reply.elapsed
        return fit_for_agent(reply.context, agent), "ok", reply.elapsed

    def _record(self, outcome: str, status: int | None, elapsed: float | None, detail: str = "") -> None:
        record: dict[str, Any] = {"at": _now_iso(), "outcome": outcome}
        if status is not None:
            record["status"] = status
        if elapsed is not None:
            record["cloud_ms"] = round(elapsed * 1000, 1)
        if detail:
            record["detail"] = detail
        with self._lock:
            self.last_recall = record

    def set_login(self, token: str) -> CloudLogin:
        login = CloudLogin(self.cloud.base_url, token)
        try:
            self.store.save(login)
        except Exception as err:  # a keychain that refuses (locked, no session): the 0600 file instead
            self.login_note = f"the OS keychain refused the login ({type(err).__name__}); kept in the file"
            self.store = FileStore(self.state_dir)
            self.store.save(login)
        else:
            self.login_note = ""
            if not isinstance(self.store, FileStore):
                FileStore(self.state_dir).clear()  # no stale copy of an older login on disk
        with self._lock:
            self.login, self.rejected = login, False
        return login

    def clear_login(self) -> None:
        with self._lock:
            self.login, self.rejected = None, False
        self.store.clear()
        FileStore(self.state_dir).clear()
        self.login_note = ""

    def current_login(self) -> CloudLogin | None:
        with self._lock:
            return self.login

    def mark_rejected(self, login: CloudLogin) -> None:
        with self._lock:
            if self.login is login:
                self.rejected = True

    def rotate_hook_token(self) -> None:
        token = self._write_hook_token()
        with self._lock:
            self.hook_token = token

    def status(self) -> dict[str, Any]:
        with self._lock:
            login, rejected, last = self.login, self.rejected, self.last_recall
        described: dict[str, Any]
        if login is None:
            described = {"state": "logged_out"}
        else:
            claims = login.claims()
            expires = login.expires_at()
            state = "expired" if login.expired(self.config.clock()) else "rejected" if rejected else "logged_in"
            described = {"state": state, "user": claims.get("sub")}
            if expires is not None:
                described["expires_at"] = _now_iso(expires)
        if self.login_note:
            described["note"] = self.login_note
        return {
            "service": self.url,
            "cloud": self.cloud.base_url,
            "login": described,
            "credential_store": self.store.description,
            "hook_token_file": os.path.join(self.state_dir, paths.HOOK_TOKEN_FILE),
            "last_recall": last,
        }
