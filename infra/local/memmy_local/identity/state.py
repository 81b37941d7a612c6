"""What the dev identity provider remembers, in memory behind one lock: codes, refresh tokens (with
their rotations), device requests (their records: ``memmy_local.identity.records``) and MCP clients
(``memmy_kb.domain.mcp_auth.clients``), with what rate-limits them (RFC 8628 5.1, 3.5; registrations per
hour). Refresh tokens are kept by their SHA-256 and, with a ``path``, written there (0600) with the MCP
clients after every change, so a login survives a restart; codes and device requests never are."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from memmy_kb.domain.mcp_auth.clients import ClientRecord, client_record_from_json
from memmy_local.identity.records import (
    DEVICE_POLL_INTERVAL,
    AuthorizationCode,
    Clock,
    DeviceRequest,
    Identity,
    RefreshRecord,
)

CODE_TTL_SECONDS = 60
DEVICE_TTL_SECONDS = 600
SLOW_DOWN_SECONDS = 5  # RFC 8628 3.5: slow_down adds 5 s to the interval, for every later poll too
WRONG_CODES_PER_CLIENT = 10
WRONG_CODE_WINDOW_SECONDS = 600
REFRESH_TTL_SECONDS = 30 * 24 * 3600
REGISTRATIONS_PER_HOUR = 100
MAX_CLIENTS = 500  # registered and metadata-document clients together; the oldest unused one makes room
_FORMAT_VERSION = 1


class RegistrationRefused(Exception):
    """No client can be added now; the message says why, ``retry_after`` (seconds) when to try again."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def normalize_user_code(text: str) -> str:
    """``bcdf-ghjk``, ``BCDFGHJK`` and ``BCDF GHJK`` all name ``BCDF-GHJK``."""
    letters = re.sub(r"[^A-Z]", "", text.upper())
    return f"{letters[:4]}-{letters[4:]}" if len(letters) == 8 else letters


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True)
class CodeEntry:
    """What a user code typed at the device page found: the pending request it names, or None; with
    ``retry_after`` > 0, nothing was looked up: the client typed too many wrong codes, and may again in
    that many seconds."""

    request: DeviceRequest | None
    retry_after: int = 0


class IdentityState:
    """Codes, refresh tokens and device requests; thread-safe. ``path``: where refresh tokens are kept."""

    def __init__(self, *, path: Path | None = None, clock: Clock = time.time) -> None:
        self.clock = clock
        self._path = path
        self._lock = threading.Lock()
        self._codes: dict[str, AuthorizationCode] = {}
        self._refresh: dict[str, RefreshRecord] = {}
        self._devices: dict[str, DeviceRequest] = {}
        self._wrong_codes: dict[str, list[float]] = {}  # client address -> when it typed a wrong code
        self._clients: dict[str, ClientRecord] = {}
        self._registrations: list[float] = []  # when each client registered in the last hour
        if path is not None and path.exists():
            self._refresh, self._clients = _load(path)

    # -- authorization codes (single use, CODE_TTL_SECONDS) -------------------------------------

    def add_code(self, record: AuthorizationCode) -> None:
        with self._lock:
            now = self.clock()
            self._codes = {k: v for k, v in self._codes.items() if v.expires_at > now}
            self._codes[record.code] = record

    def take_code(self, code: str, client_id: str) -> AuthorizationCode | None:
        """The code's record, removed: a second presentation finds nothing."""
        with self._lock:
            record = self._codes.pop(code, None)
        if record is None or record.client_id != client_id or record.expires_at <= self.clock():
            return None
        return record

    # -- refresh tokens (rotated on each use, revocable by family) ------------------------------

    def add_refresh(
        self,
        token: str,
        *,
        client_id: str,
        scope: str,
        identity: Identity,
        family: str | None = None,
        resource: str | None = None,
    ) -> None:
        record = RefreshRecord(
            token_hash=_hash(token),
            family=family or secrets.token_hex(16),
            client_id=client_id,
            scope=scope,
            identity=identity,
            issued_at=self.clock(),
            resource=resource,
        )
        with self._lock:
            self._refresh[record.token_hash] = record
            self._save()

    def claim_refresh(self, token: str) -> RefreshRecord | None:
        """The active record of ``token``, marked rotated at once (one use). A rotated-away token
        presented again revokes its whole family (it has leaked); revoked and expired ones find nothing."""
        with self._lock:
            record = self._refresh.get(_hash(token))
            if record is None or record.issued_at + REFRESH_TTL_SECONDS <= self.clock():
                return None
            if record.state == "rotated":
                self._revoke_family(record.family)
            if record.state != "active":
                self._save()
                return None
            record.state = "rotated"
            self._save()
            return replace(record)

    def find_refresh(self, token: str) -> RefreshRecord | None:
        with self._lock:
            record = self._refresh.get(_hash(token))
            return replace(record) if record is not None else None

    def revoke_family(self, family: str) -> None:
        with self._lock:
            self._revoke_family(family)
            self._save()

    def _revoke_family(self, family: str) -> None:
        for record in self._refresh.values():
            if record.family == family:
                record.state = "revoked"

    def _save(self) -> None:
        if self._path is None:
            return
        horizon = self.clock() - REFRESH_TTL_SECONDS
        self._refresh = {k: v for k, v in self._refresh.items() if v.issued_at > horizon}
        records = [asdict(record) for record in self._refresh.values()]
        clients = [asdict(record) for record in self._clients.values()]
        body = json.dumps({"version": _FORMAT_VERSION, "refresh_tokens": records, "clients": clients})
        self._path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._path.with_name(f".{self._path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(body)
        tmp.replace(self._path)

    # -- MCP clients (registered, or named by a metadata document) -------------------------------

    def register_client(self, record: ClientRecord) -> None:
        """Keep a newly registered client; ``RegistrationRefused`` past ``REGISTRATIONS_PER_HOUR``."""
        with self._lock:
            now = self.clock()
            self._registrations = [t for t in self._registrations if t > now - 3600]
            if len(self._registrations) >= REGISTRATIONS_PER_HOUR:
                wait = max(1, math.ceil(self._registrations[0] + 3600 - now))
                raise RegistrationRefused(
                    f"At most {REGISTRATIONS_PER_HOUR} clients may register in an hour; try again in "
                    f"{math.ceil(wait / 60)} minutes.",
                    wait,
                )
            self._keep_client(record)
            self._registrations.append(now)
            self._save()

    def remember_client(self, record: ClientRecord) -> None:
        """Keep (or refresh) a client read from its metadata document."""
        with self._lock:
            self._clients.pop(record.client_id, None)
            self._keep_client(record)
            self._save()

    def client(self, client_id: str) -> ClientRecord | None:
        with self._lock:
            return self._clients.get(client_id)

    def _keep_client(self, record: ClientRecord) -> None:
        if len(self._clients) >= MAX_CLIENTS:
            in_use = {r.client_id for r in self._refresh.values() if r.state == "active"}
            unused = sorted(
                (r.created_at, r.client_id) for r in self._clients.values() if r.client_id not in in_use
            )
            if not unused:
                raise RegistrationRefused(
                    f"This provider already keeps {MAX_CLIENTS} clients, all signed in; revoke some first.",
                    3600,
                )
            del self._clients[unused[0][1]]
        self._clients[record.client_id] = record

    # -- device requests (RFC 8628) -------------------------------------------------------------

    def add_device(self, client_id: str, scope: str, data: dict[str, Any]) -> None:
        record = DeviceRequest(
            device_code=data["device_code"],
            user_code=data["user_code"],
            client_id=client_id,
            scope=scope,
            expires_at=self.clock() + int(data["expires_in"]),
            clock=self.clock,
            interval=int(data.get("interval") or DEVICE_POLL_INTERVAL),
        )
        with self._lock:
            # Expired requests stay a while, so that polling them answers expired_token.
            horizon = self.clock() - DEVICE_TTL_SECONDS
            self._devices = {k: v for k, v in self._devices.items() if v.expires_at > horizon}
            self._devices[record.device_code] = record

    def device(self, device_code: str) -> DeviceRequest | None:
        with self._lock:
            return self._devices.get(device_code)

    def poll_too_soon(self, device_code: str) -> bool:
        """Note a poll of the request; True when it came sooner than its interval after the previous one
        (answer ``slow_down``), and then the interval grows by ``SLOW_DOWN_SECONDS``, as the client's does."""
        with self._lock:
            record = self._devices.get(device_code)
            if record is None:
                return False
            now = self.clock()
            too_soon = record.last_poll is not None and now - record.last_poll < record.interval
            record.last_poll = now
            if too_soon:
                record.interval += SLOW_DOWN_SECONDS
            return too_soon

    def enter_user_code(self, typed: str, client: str) -> CodeEntry:
        """The pending request whose user code is ``typed`` (any spelling), as ``client`` (its address)
        typed it. A wrong code counts against the client and against every request then pending (any of
        them may be the one guessed at); a client with ``WRONG_CODES_PER_CLIENT`` wrong codes in the window
        gets nothing looked up until the oldest of them leaves it."""
        wanted = normalize_user_code(typed)
        with self._lock:
            now = self.clock()
            start = now - WRONG_CODE_WINDOW_SECONDS
            self._wrong_codes = {
                k: [t for t in v if t > start] for k, v in self._wrong_codes.items() if v and v[-1] > start
            }
            wrong = self._wrong_codes.setdefault(client, [])
            if len(wrong) >= WRONG_CODES_PER_CLIENT:
                return CodeEntry(None, retry_after=max(1, math.ceil(wrong[0] - start)))
            found = next((r for r in self._devices.values() if r.user_code == wanted and r.pending()), None)
            if found is None:
                wrong.append(now)
                for record in self._devices.values():
                    if record.pending():
                        record.wrong_codes += 1
            return CodeEntry(found)

    def approve_device(self, user_code: str, identity: Identity) -> bool:
        with self._lock:
            record = next((r for r in self._devices.values() if r.user_code == user_code), None)
            if record is None or not record.pending():
                return False
            record.identity = identity
            return True

    def user_grant(self, user_code: str) -> tuple[Identity | None, bool] | None:
        """``(identity, True)`` once approved, ``(None, False)`` once refused, None while pending."""
        with self._lock:
            record = next((r for r in self._devices.values() if r.user_code == user_code), None)
            if record is not None and record.identity is not None:
                return record.identity, True
            return (None, False) if record is not None and record.refused() else None

    def drop_device(self, device_code: str) -> bool:
        """Forget the request (its token was issued); False when it was already gone."""
        with self._lock:
            return self._devices.pop(device_code, None) is not None


def _load(path: Path) -> tuple[dict[str, RefreshRecord], dict[str, ClientRecord]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        records = [
            RefreshRecord(**{**item, "identity": Identity(**item["identity"])})
            for item in data.get("refresh_tokens", [])
        ]
        clients = [client_record_from_json(item) for item in data.get("clients", [])]
    except (OSError, ValueError, TypeError, KeyError):
        return {}, {}  # an unreadable file: every desktop and MCP client signs in (registers) again
    return {record.token_hash: record for record in records}, {c.client_id: c for c in clients}
