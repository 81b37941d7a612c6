"""The desktop service's status as it answers it (``GET /control/status``, and after a login, a logout or a
finished sign-in), as ``TypedDict``s the way ``replies.py`` has the cloud's: built here from the state's
values, read by ``status_text`` and the commands (docs/desktop.md, "The local service"). Types only at
run time: nothing checks a status when it is read, and a reader of another version's reads warily."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

if TYPE_CHECKING:
    from memmy_kb_client.home.credentials import CloudLogin
    from memmy_kb_client.sync.link_state import ShownLink, UnreadableLink

LoginState = Literal["logged_out", "logged_in", "expired", "rejected"]
SecretStore = Literal["keychain", "file"]


class LastRecall(TypedDict):
    """What the last recall that reached for the cloud came to: when, its outcome (``ok``,
    ``unauthorized``, ``rate_limited``...), the cloud's HTTP status and time when it answered, and what
    went wrong in words."""

    at: str
    outcome: str
    status: NotRequired[int]
    cloud_ms: NotRequired[float]
    detail: NotRequired[str]


class LoginStatus(TypedDict):
    """The cloud login: its state, and when there is one its user (the ID token's ``sub``), name and email
    when the token has them, its expiry, whether the service refreshes it; ``note``: what went wrong with
    it (a keychain that refused, a sign-in that ended)."""

    state: LoginState
    user: NotRequired[str | None]
    name: NotRequired[str]
    email: NotRequired[str]
    expires_at: NotRequired[str]
    refreshes: NotRequired[bool]
    note: NotRequired[str]


class DesktopStatus(TypedDict):
    """The service: where it listens, its cloud, its login, where the secrets are kept, the hook token's
    file, the last recall, the prompts answered without the cloud and the linked folders; ``warning``
    when a secret is a file any process of the user can read."""

    service: str
    cloud: str
    login: LoginStatus
    credential_store: str
    secrets: SecretStore
    hook_token_file: str
    last_recall: LastRecall | None
    skipped_prompts: int
    # The linked folders; one ``UnreadableLink`` in their place when their records could not be read.
    links: list[ShownLink | UnreadableLink]
    warning: NotRequired[str]


def iso_time(at: float | None = None) -> str:
    """``at`` (now when None) as the status writes times: UTC, to the second."""
    return datetime.fromtimestamp(time.time() if at is None else at, UTC).isoformat(timespec="seconds")


def last_recall(outcome: str, status: int | None, elapsed: float | None, detail: str = "") -> LastRecall:
    """A recall's outcome as the status shows it, stamped now."""
    record: LastRecall = {"at": iso_time(), "outcome": outcome}
    if status is not None:
        record["status"] = status
    if elapsed is not None:
        record["cloud_ms"] = round(elapsed * 1000, 1)
    if detail:
        record["detail"] = detail
    return record


def login_status(login: CloudLogin | None, *, rejected: bool, now: float, note: str) -> LoginStatus:
    """``login`` as the status shows it: ``expired`` once it lapsed with nothing to refresh it,
    ``rejected`` after the cloud refused it (401)."""
    described: LoginStatus
    if login is None:
        described = {"state": "logged_out"}
    else:
        profile = login.profile()
        expires = login.expires_at()
        lapsed = login.expired(now) and not login.refreshable()
        state: LoginState = "expired" if lapsed else "rejected" if rejected else "logged_in"
        described = {"state": state, "user": profile.get("sub")}
        name, email = profile.get("name"), profile.get("email")
        if isinstance(name, str):
            described["name"] = name
        if isinstance(email, str):
            described["email"] = email
        if expires is not None:
            described["expires_at"] = iso_time(expires)
        described["refreshes"] = login.refreshable()
    if note:
        described["note"] = note
    return described


def files_warning(secrets: SecretStore, control_store: str, private_dir: str) -> str | None:
    """The warning when the login or the control token is a file rather than in an OS keychain."""
    in_files = [
        what for what, kind in (("the login", secrets), ("the control token", control_store)) if kind == "file"
    ]
    if not in_files:
        return None
    return (
        f"no OS keychain holds {' and '.join(in_files)}: "
        f"{'they are files' if len(in_files) > 1 else 'it is a file'} in {private_dir}, "
        "which any process running as this user can read"
    )
