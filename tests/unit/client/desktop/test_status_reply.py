"""The desktop service's status (``desktop/status_reply.py``): the login as the status shows it in each of
its states, the warning when a secret is a file, and a state's whole status holding exactly the fields
``DesktopStatus`` names (those it requires always), so the type and what is answered cannot part."""

from __future__ import annotations

import base64
import json
import typing
from pathlib import Path
from typing import Any, NotRequired

import pytest

from memmy_kb_client.desktop.state import DesktopConfig, DesktopState
from memmy_kb_client.desktop.status_reply import (
    DesktopStatus,
    LastRecall,
    LoginStatus,
    files_warning,
    last_recall,
    login_status,
)
from memmy_kb_client.home.credentials import CloudLogin
from memmy_kb_client.sync.link_state import ShownLink, UnreadableLink

NOW = 1_800_000_000.0


def _token(**claims: Any) -> str:
    """An unsigned JWT with ``claims``: the status reads a login's claims, it never verifies them."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none'})}.{part(claims)}.sig"


def _fields(typed_dict: type) -> tuple[set[str], set[str]]:
    """The required and the optional fields of ``typed_dict``, read from its hints."""
    # The status module names the links' types for the type checker only.
    names = {"ShownLink": ShownLink, "UnreadableLink": UnreadableLink}
    hints = typing.get_type_hints(typed_dict, localns=names, include_extras=True)
    optional = {name for name, hint in hints.items() if typing.get_origin(hint) is NotRequired}
    return set(hints) - optional, optional


def _fits(value: dict[str, Any], typed_dict: type) -> bool:
    required, optional = _fields(typed_dict)
    return required <= set(value) <= required | optional


def test_no_login_is_logged_out_with_its_note():
    assert login_status(None, rejected=False, now=NOW, note="") == {"state": "logged_out"}
    assert login_status(None, rejected=False, now=NOW, note="why") == {"state": "logged_out", "note": "why"}


def test_a_login_shows_its_user_name_email_expiry_and_refresh():
    token = _token(sub="u-1", name="Alice", email="a@example.com", exp=NOW + 3600)
    login = CloudLogin("https://api.example", token, refresh_token="rt", token_endpoint="https://idp/token")
    shown = login_status(login, rejected=False, now=NOW, note="")
    assert shown == {
        "state": "logged_in",
        "user": "u-1",
        "name": "Alice",
        "email": "a@example.com",
        "expires_at": "2027-01-15T09:00:00+00:00",
        "refreshes": True,
    }
    assert _fits(dict(shown), LoginStatus)


def test_a_lapsed_login_nothing_refreshes_is_expired_and_a_refused_one_rejected():
    login = CloudLogin("https://api.example", _token(sub="u-1", name=7, exp=NOW - 1))
    assert login_status(login, rejected=False, now=NOW, note="")["state"] == "expired"
    assert "name" not in login_status(login, rejected=False, now=NOW, note="")  # not a string: not shown
    fresh = CloudLogin("https://api.example", _token(sub="u-1", exp=NOW + 60))
    assert login_status(fresh, rejected=True, now=NOW, note="")["state"] == "rejected"


def test_a_recall_is_recorded_with_what_the_cloud_answered():
    record = last_recall("unauthorized", 401, 0.01234, "refused")
    assert {key: record[key] for key in ("outcome", "status", "cloud_ms", "detail")} == {  # type: ignore[literal-required]
        "outcome": "unauthorized",
        "status": 401,
        "cloud_ms": 12.3,
        "detail": "refused",
    }
    assert set(last_recall("logged_out", None, None)) == {"at", "outcome"}
    assert _fits(dict(record), LastRecall)


@pytest.mark.parametrize(
    ("secrets", "control", "warned"),
    [
        ("keychain", "keychain", None),
        ("file", "keychain", "no OS keychain holds the login: it is a file in /p,"),
        ("keychain", "file", "no OS keychain holds the control token: it is a file in /p,"),
        ("file", "file", "no OS keychain holds the login and the control token: they are files in /p,"),
    ],
)
def test_a_secret_kept_in_a_file_is_warned_of(secrets, control, warned):
    warning = files_warning(secrets, control, "/p")
    assert (warning.split(" which")[0] if warning else None) == warned


def test_a_states_status_has_exactly_the_fields_its_type_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
    state = DesktopState(DesktopConfig(state_dir=str(tmp_path / "desktop"), cloud_url="https://api.example"))
    status: DesktopStatus = state.status()
    assert _fits(dict(status), DesktopStatus)
    assert status["warning"].startswith("no OS keychain holds the login and the control token")
    assert status["login"] == {"state": "logged_out"}
    state.keep_login(CloudLogin("https://api.example", _token(sub="u-1")))
    state._record("ok", 200, 0.5)
    status = state.status()
    assert status["login"]["state"] == "logged_in"
    assert status["last_recall"] is not None
    assert _fits(dict(status["last_recall"]), LastRecall)


def test_the_fit_check_sees_a_field_too_many_and_one_missing():
    assert not _fits({"at": "x", "outcome": "ok", "elapsed": 1}, LastRecall)
    assert not _fits({"outcome": "ok"}, LastRecall)
