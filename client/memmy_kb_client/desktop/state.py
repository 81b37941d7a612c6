"""The desktop service's state, shared by its request threads: its tokens, its cloud login (refreshed one
thread at a time) and what the last recall met. docs/desktop.md, "The local service"."""

from __future__ import annotations

import enum
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from memmy_kb_client.desktop import oidc, page
from memmy_kb_client.desktop.cloud import RATE_LIMITED, Cloud, RecallAnswer, retry_after
from memmy_kb_client.desktop.flows import LOGGED_OUT, REPLACED, LoginFlows
from memmy_kb_client.desktop.status_reply import (
    DesktopStatus,
    LastRecall,
    SecretStore,
    files_warning,
    last_recall,
    login_status,
)
from memmy_kb_client.desktop.trivial import is_trivial_prompt
from memmy_kb_client.home import advice, paths, proof
from memmy_kb_client.home.credentials import (
    CloudLogin,
    FileStore,
    KeyringStore,
    ServiceRecord,
    forget_control_record,
    open_store,
    put_control_record,
)
from memmy_kb_client.http_client import OK, UNAUTHORIZED
from memmy_kb_client.recall_contract import recall_body

if TYPE_CHECKING:
    from memmy_kb_client.replies import RecallResponse

DEFAULT_PORT: Final = 8765
HOST: Final = "127.0.0.1"
HOOK_TOKEN_PREFIX: Final = "mkh_"  # noqa: S105 - a prefix, not a secret
CONTROL_TOKEN_PREFIX: Final = "mkc_"  # noqa: S105 - a prefix, not a secret
# After a refresh that failed (provider unreachable, an error other than invalid_grant), the next try waits.
REFRESH_RETRY_SECONDS: Final = 5.0
SIGN_IN_ENDED: Final = (
    "the sign-in has ended (the provider refused to refresh it): run `{login}`"
)


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
    # Seconds for each call to the cloud's login configuration and to the identity provider.
    login_timeout: float = 10.0
    # Answer a slash command or an "ok" / "继续" with no block and no cloud call (``trivial.py``).
    skip_trivial_prompts: bool = True
    # The local stack that runs this service (``make run``), so advice names it; None: ``desktop serve``.
    launcher: advice.Launcher | None = None


def _new_token(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


class DesktopState:
    """Shared by all request threads: one lock guards the tokens, the login and the last recall (never held
    across a cloud call); a second lets one thread at a time refresh the login (``fresh_login``)."""

    def __init__(self, config: DesktopConfig) -> None:
        self.config = config
        self.state_dir = config.state_dir
        self.cloud = Cloud(config.cloud_url, timeout=config.cloud_timeout)
        self.private_dir = paths.private_dir(config.state_dir)
        self.store: FileStore | KeyringStore = open_store(config.state_dir, config.keyring_backend)
        self._lock = threading.Lock()
        # Held by a refresh, and by every other change of the login, so a refresh that ends after a new
        # login or a logout never writes the old login back (re-entrant: a refresh may log out).
        self._refresh_lock = threading.RLock()
        self._refresh_attempts = 0
        self._refresh_failure = ""
        self._retry_refresh_at = 0.0  # time.monotonic()
        self.hook_token = ""
        self.control_token = ""
        self.control_store = "file"
        self.login: CloudLogin | None = None
        self.login_note = ""
        self.rejected = False
        # A sign-in's flows complete under the same lock as every other change of the login.
        self.flows = LoginFlows(
            self.keep_login, config.clock, timeout=config.login_timeout, login_lock=self._refresh_lock
        )
        self.last_recall: LastRecall | None = None
        self.skipped_prompts = 0  # prompts answered without the cloud since the service started
        self.url = ""
        self.port = 0
        self.sessions = page.Sessions()
        # The linked folders (``memmy_kb_client.sync.links.Links``, or ``link_routes.UnreadableLinks``
        # when their records could not be read), while the service runs.
        self.links: Any = None

    def commands(self) -> dict[str, str]:
        """What the page and the service's own pages tell the person to run (``advice.service_commands``)."""
        return advice.service_commands(self.state_dir, self.config.launcher)

    @property
    def cookie_name(self) -> str:
        # Cookies are not kept apart by port: two services on one machine each name their own.
        return f"memmy_kb_session_{self.port}"

    # ---------------------------------------------------------------------------------------- setup

    def load(self) -> None:
        """The hook token from (or into) the state directory, a new control token with where the service
        listens (``port`` and ``url`` are set) into the secret store, and the saved cloud login if it is
        for our cloud. Secrets an older version left beside the hook token are removed unread
        (``_remove_older_secrets``)."""
        self.hook_token = paths.read_token(self.state_dir, paths.HOOK_TOKEN_FILE) or self._write_hook_token()
        try:
            saved = self.store.load()
        except Exception as err:  # a keychain that will not answer: the files, as at login
            self.login_note = f"the OS keychain could not be read ({type(err).__name__}); using the file"
            self.store = FileStore(self.private_dir)
            saved = self.store.load()
        if self._remove_older_secrets() and saved is None:
            self.login_note = (
                f"a login found in {self.state_dir}, where an older version kept it, was removed unread: "
                f"run `{self.commands()['login']}`"
            )
        self.control_token = _new_token(CONTROL_TOKEN_PREFIX)
        record = ServiceRecord(self.control_token, self.port, os.getpid(), self.url)
        self.control_store, note = put_control_record(self.store, self.private_dir, record)
        self.login_note = note or self.login_note
        if saved is not None and saved.cloud != self.cloud.base_url:
            self.login_note = f"the saved login is for {saved.cloud}, not {self.cloud.base_url}: log in again"
            saved = None
        self.login = saved

    def _remove_older_secrets(self) -> bool:
        """An older version kept the login and the control token beside the hook token, in ``desktop/``:
        both files go, unread (True when there was a login). Anything that can write that directory (an
        agent's sandbox allows it) could have put a login of its own there, which would sign this service
        in to another account."""
        paths.remove(os.path.join(self.state_dir, paths.CONTROL_TOKEN_FILE))
        old = os.path.join(self.state_dir, paths.LOGIN_FILE)
        if not os.path.lexists(old):
            return False
        paths.remove(old)
        return True

    def forget_control_token(self) -> None:
        """On stop: the control token is of no use any more."""
        forget_control_record(self.store, self.private_dir, self.control_token)

    def prove(self, purpose: str, nonce: str) -> str:
        """The answer to ``GET /proof``: the proof under the ``purpose`` token for this port."""
        with self._lock:
            token = self.control_token if purpose == "control" else self.hook_token
        return proof.answer(token, purpose, nonce, self.port)

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

    def recall(self, query: str, agent: str | None) -> RecallAnswer:
        """The block for ``query``, built by the cloud within ``agent``'s limit (``recall_contract``).

        A prompt with nothing to search is answered at once with the outcome ``skipped``; the last
        recall shown by the status stays the last one that reached the cloud."""
        if self.config.skip_trivial_prompts and is_trivial_prompt(query):
            with self._lock:
                self.skipped_prompts += 1
            return RecallAnswer("", "skipped")
        login, outcome = self.fresh_login()
        if login is None:
            if outcome != "logged_out":
                self._record(outcome, None, None)
            return RecallAnswer("", outcome)
        reply = self.cloud.recall(login.token, recall_body(query, agent))
        with self._lock:
            if self.login is login:
                self.rejected = reply.outcome == UNAUTHORIZED
        self._record(reply.outcome, reply.status, reply.elapsed, reply.detail)
        if reply.outcome != OK:
            wait = retry_after(reply) if reply.outcome == RATE_LIMITED else None
            return RecallAnswer("", reply.outcome, cloud_seconds=reply.elapsed, retry_after=wait)
        answer: RecallResponse = reply.answer  # its context checked by ``Cloud.recall``
        items = answer.get("items")
        excerpts = len(items) if isinstance(items, list) else 0
        return RecallAnswer(answer["context"], OK, excerpts, reply.elapsed)

    def _record(self, outcome: str, status: int | None, elapsed: float | None, detail: str = "") -> None:
        record = last_recall(outcome, status, elapsed, detail)
        with self._lock:
            self.last_recall = record

    def set_login(self, token: str) -> CloudLogin:
        """A pasted token (``desktop login --token``): kept as it is, with nothing to refresh it."""
        login = CloudLogin(self.cloud.base_url, token)
        self.keep_login(login)
        return login

    def keep_login(self, login: CloudLogin) -> None:
        """A new login, saved before it is used; every sign-in still pending is cancelled (a flow that
        completes calls this with the lock held, after it is marked done)."""
        with self._refresh_lock:
            self._save(login)
            with self._lock:
                self.login, self.rejected, self._refresh_failure = login, False, ""
                self._retry_refresh_at = 0.0
            self.flows.cancel_pending(REPLACED)

    def _save(self, login: CloudLogin) -> None:
        try:
            self.store.save(login)
        except Exception as err:  # a keychain that refuses (locked, no session): the 0600 file instead
            self.login_note = f"the OS keychain refused the login ({type(err).__name__}); kept in the file"
            self.store = FileStore(self.private_dir)
            self.store.save(login)
        else:
            self.login_note = ""
            if not isinstance(self.store, FileStore):
                FileStore(self.private_dir).clear()  # no stale copy of an older login on disk

    def clear_login(self, note: str = "") -> CloudLogin | None:
        with self._refresh_lock:
            with self._lock:
                login, self.login, self.rejected = self.login, None, False
            self.store.clear()
            FileStore(self.private_dir).clear()
            self.login_note = note
        return login

    def logout(self) -> None:
        """Cancel every pending sign-in and forget the login here, then revoke its refresh token at the
        provider (best effort)."""
        with self._refresh_lock:
            self.flows.cancel_pending(LOGGED_OUT)
            login = self.clear_login()
        if login is not None and login.refreshable():
            oidc.revoke(login, timeout=min(self.config.login_timeout, 5.0))

    def fresh_login(self) -> tuple[CloudLogin | None, str]:
        """The login to send, refreshed first when it expires within the margin; else None and why
        (``logged_out``, ``expired``, ``unreachable``). Never an expired one. One refresh at a time:
        a thread that waited for another's re-checks and uses what that one got."""
        with self._lock:
            login, attempts = self.login, self._refresh_attempts
        if login is None:
            return None, "logged_out"
        now = self.config.clock()
        if not login.refresh_due(now) or not login.refreshable():
            return (None, "expired") if login.expired(now) else (login, "")
        with self._refresh_lock:
            with self._lock:
                current, seen, failure = self.login, self._refresh_attempts, self._refresh_failure
                retry_at = self._retry_refresh_at
            if current is None:
                return None, "logged_out"
            now = self.config.clock()
            untried = current is not login or seen == attempts
            due = current.refresh_due(now) and current.refreshable()
            if due and untried and time.monotonic() >= retry_at:
                return self._refresh(current, now)
            # Another thread refreshed (or tried to) while this one waited: its outcome stands.
            if current.expired(now):
                return None, failure or "expired"
            return current, ""

    def _refresh(self, login: CloudLogin, now: float) -> tuple[CloudLogin | None, str]:
        with self._lock:
            self._refresh_attempts += 1
        try:
            # No longer than a call to the cloud: a hook waits for the answer.
            renewed = oidc.refresh(login, now, min(self.config.login_timeout, self.config.cloud_timeout))
        except oidc.ProviderRefused as err:
            if err.code == "invalid_grant":
                self.clear_login(SIGN_IN_ENDED.replace("{login}", self.commands()["login"]))
                return None, "logged_out"
            return self._refresh_failed(login, now, "expired", f"refreshing the login failed: {err.message}")
        except oidc.ProviderUnreachable as err:
            return self._refresh_failed(login, now, "unreachable", f"refreshing the login failed: {err.message}")
        except oidc.LoginError as err:
            return self._refresh_failed(login, now, "expired", f"refreshing the login failed: {err.message}")
        self._save(renewed)  # the rotated refresh token is kept before anything uses it
        with self._lock:
            self.login, self.rejected, self._refresh_failure = renewed, False, ""
        return renewed, ""

    def _refresh_failed(
        self, login: CloudLogin, now: float, outcome: str, note: str
    ) -> tuple[CloudLogin | None, str]:
        with self._lock:
            self._refresh_failure = outcome
            self._retry_refresh_at = time.monotonic() + REFRESH_RETRY_SECONDS
        self.login_note = note
        return (None, outcome) if login.expired(now) else (login, "")

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

    def status(self) -> DesktopStatus:
        """The service's status (``GET /control/status``), as ``status_reply`` shapes it."""
        with self._lock:
            login, rejected, last, skipped = self.login, self.rejected, self.last_recall, self.skipped_prompts
        secrets: SecretStore = "keychain" if isinstance(self.store, KeyringStore) else "file"
        answer: DesktopStatus = {
            "service": self.url,
            "cloud": self.cloud.base_url,
            "login": login_status(login, rejected=rejected, now=self.config.clock(), note=self.login_note),
            "credential_store": self.store.description,
            "secrets": secrets,
            "hook_token_file": os.path.join(self.state_dir, paths.HOOK_TOKEN_FILE),
            "last_recall": last,
            "skipped_prompts": skipped,
            "links": self.links.shown() if self.links is not None else [],
        }
        warning = files_warning(secrets, self.control_store, self.private_dir)
        if warning is not None:
            answer["warning"] = warning
        return answer
