"""``make load``: several users at once on the local stack, bounded in time and requests, with an oracle.

The stack runs as a subprocess on loopback (``bench.load_stack``: ``LocalStack`` with the abuse limits
raised). Each user is a thread with its own HTTP client, registering a profile and then picking actions
at random (seeded) until the time or the request budget runs out: create a KB, upload a small text file
through the real flow (``POST .../uploads``, the presigned POST to S3, the S3 -> SQS -> ingest -> MemOS
path the stack runs), share a KB by user id, phone or email, revoke, leave, turn recall on or off, recall,
delete a file, delete a KB. Every document carries its KB's marker token, so each excerpt names its KB.

The oracle (``bench.load_oracle``) then checks:

1. every recall against the changes in flight around it: no excerpt of a KB that was definitely out of
   the caller's scope for the whole recall;
2. once the ingest has settled, every user's KB list (role and recall setting), every live KB's members
   and files equal the client-side model of what succeeded;
3. after the reconciler has run (the stack's control endpoint) and the cleanups have finished, MemOS
   holds exactly the live KBs and files.

It prints requests per second, p50/p99 latency per route, errors (5xx, no answer, or a status the route
should not give; 429s are counted apart), the oracle's counts and its verdict. Exit status 1 on any
violation or error.

    python -m bench.load [--duration 60] [--requests 5000] [--users 6] [--seed N]

Each flag has an environment variable (``LOAD_DURATION``, ``LOAD_REQUESTS``, ``LOAD_USERS``,
``LOAD_SEED``, ``LOAD_SETTLE_SECONDS``).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import load_oracle as oracle
from bench.load_stack import FAULT_PREFIX, FAULTS, READY_PREFIX

QUERY = "loadprobe quarterly roadmap"
RECALL_LIMIT = 25
MAX_OWNED_KBS = 3
MAX_FILES_PER_KB = 3
STACK_READY_SECONDS = 90
REQUEST_TIMEOUT_SECONDS = 30
RATE_LIMITED = 429
# Actions and their weights; an action with nothing to act on (nothing to revoke) falls back to a create,
# or when the user owns the most KBs allowed here, to a recall.
WEIGHTS = {
    "recall": 28,
    "create": 7,
    "upload": 18,
    "share": 13,
    "revoke": 7,
    "leave": 3,
    "toggle": 14,
    "delete_file": 5,
    "delete_kb": 3,
    "list": 3,
}
# Statuses a route may answer under this workload besides its success; anything else is an error.
EXPECTED = {
    "PUT /me": {200},
    "POST /knowledge-bases": {201},
    "GET /knowledge-bases": {200},
    "POST /knowledge-bases/{kb}/uploads": {201},
    "POST <presigned S3 POST>": {204},
    "POST /knowledge-bases/{kb}/members": {201, 409},  # 409 already_member after a lost race
    "DELETE /knowledge-bases/{kb}/members/{user}": {204, 404},  # revoke vs leave
    "PUT /knowledge-bases/{kb}/recall": {200, 404},  # a reader's toggle vs a revoke or delete
    "POST /recall": {200},
    "GET /knowledge-bases/{kb}/files": {200},
    "GET /knowledge-bases/{kb}/members": {200},
    "DELETE /knowledge-bases/{kb}/files/{file}": {202},
    "DELETE /knowledge-bases/{kb}": {202},
}

# Of those, the refusals that must carry a given error code (a 409 identifier_ambiguous is a bug here:
# every user's phone and email are their own).
EXPECTED_CODES = {("POST /knowledge-bases/{kb}/members", 409): {"already_member"}}


def _error_code(response: httpx.Response) -> str | None:
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return str(code)


@dataclass
class LoadSettings:
    duration: float = 60.0
    requests: int = 5000
    users: int = 6
    seed: int | None = None
    settle_seconds: float = 120.0
    processing_delay: float = 0.2
    keep_limits: bool = False
    fault: str | None = None
    final_checks: bool = True  # the lists, the ingest's outcome and MemOS residue after the load
    workdir: Path | None = None

    @classmethod
    def from_environment(cls) -> LoadSettings:
        env = os.environ
        seed = env.get("LOAD_SEED")
        return cls(
            duration=float(env.get("LOAD_DURATION", cls.duration)),
            requests=int(env.get("LOAD_REQUESTS", cls.requests)),
            users=int(env.get("LOAD_USERS", cls.users)),
            seed=int(seed) if seed else None,
            settle_seconds=float(env.get("LOAD_SETTLE_SECONDS", cls.settle_seconds)),
        )


# ------------------------------------------------------------------------------------------ the stack


@dataclass
class Stack:
    api_url: str
    memos_url: str
    control_url: str
    home: Path
    log_path: Path
    limits: dict[str, str]
    process: subprocess.Popen[bytes]
    broken: bool = False

    def token(self, user: str, **claims: Any) -> str:
        from memmy_local import tokens

        return tokens.issue_token(user, key_path=tokens.signing_key_path(self.home), **claims)

    def reconcile(self) -> dict[str, Any]:
        from memmy_local.control import TOKEN_HEADER, read_state

        state = read_state(self.home)
        reply = httpx.post(
            f"{self.control_url}/schedules/ReconcileFunction",
            headers={TOKEN_HEADER: state["token"]},
            timeout=120,
        )
        body: dict[str, Any] = reply.json()
        return body

    def memos_state(self) -> dict[str, Any]:
        state: dict[str, Any] = httpx.get(f"{self.memos_url}/_emulator/state", timeout=30).json()
        return state

    def break_recall_scope(self) -> None:
        """Break the running stack on purpose (``bench.load_stack``) and wait until it says it is broken."""
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while FAULT_PREFIX not in self.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError("the load stack did not confirm the fault")
            time.sleep(0.05)
        self.broken = True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_stack(workdir: Path, settings: LoadSettings) -> Stack:
    workdir.mkdir(parents=True, exist_ok=True)
    home = workdir / "home"
    log_path = workdir / "stack.log"
    command = [sys.executable, "-m", "bench.load_stack", "--home", str(home)]
    command += ["--processing-delay", str(settings.processing_delay)]
    if settings.keep_limits:
        command.append("--keep-limits")
    if settings.fault:
        command += ["--fault", settings.fault]
    env = {**os.environ, "MEMMY_KB_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    repo = Path(__file__).resolve().parents[1]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(  # noqa: S603 - our own module with fixed arguments
            command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=repo
        )
    deadline = time.monotonic() + STACK_READY_SECONDS
    while True:
        text = log_path.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith(READY_PREFIX):
                ready = json.loads(line[len(READY_PREFIX) :])
                return Stack(
                    api_url=ready["api_url"],
                    memos_url=ready["memos_url"],
                    control_url=ready["control_url"],
                    home=home,
                    log_path=log_path,
                    limits=ready["limits"],
                    process=process,
                )
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                process.kill()
                process.wait()
            raise RuntimeError(f"the load stack did not start:\n{text[-4000:]}")
        time.sleep(0.1)


# ----------------------------------------------------------------------------------------- the model


@dataclass
class Upload:
    upload_id: str
    filename: str
    stored: bool = False  # the presigned POST answered 204
    deleted: bool | None = False  # None: a delete of unknown outcome
    file_id: str | None = None


@dataclass
class Kb:
    kb_id: str
    owner: str
    marker: str
    created: oracle.Outcome
    deleted: bool | None = False  # None: a delete of unknown outcome
    uploads: dict[str, Upload] = field(default_factory=dict)


@dataclass
class RequestRecord:
    route: str
    status: int  # 0: no answer
    start: float
    end: float
    expected: bool


class Model:
    """What the clients know succeeded, and the history the oracle reads; one lock for all of it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.t0 = time.monotonic()  # every recorded time is seconds since the model was made
        self.kbs: dict[str, Kb] = {}
        self.markers: dict[str, str] = {}
        self.documents_since: dict[str, float] = {}
        self.changes: list[oracle.Change] = []
        self.recalls: list[oracle.Recall] = []
        self.shares: dict[tuple[str, str], list[oracle.Outcome]] = defaultdict(list)
        self.removals: dict[tuple[str, str], list[oracle.Outcome]] = defaultdict(list)
        self.toggles: dict[tuple[str, str], list[tuple[oracle.Outcome, bool]]] = defaultdict(list)
        self.believed_recall: dict[tuple[str, str], bool] = {}
        self.uncertain_creates = 0
        self.requests: list[RequestRecord] = []
        self.final_counts: Counter[str] = Counter()  # what the checks after the run compared
        self.driver_errors: list[str] = []

    def owned(self, user: str) -> list[Kb]:
        return [kb for kb in self.kbs.values() if kb.owner == user and kb.deleted is False]

    def believed_member(self, reader: str, kb_id: str) -> bool:
        try:
            return bool(oracle.membership_after(self.shares[(reader, kb_id)], self.removals[(reader, kb_id)]))
        except ValueError:
            return False

    def visible(self, user: str) -> list[Kb]:
        return [
            kb
            for kb in self.kbs.values()
            if kb.deleted is False and (kb.owner == user or self.believed_member(user, kb.kb_id))
        ]


@dataclass(frozen=True)
class User:
    user_id: str
    name: str
    email: str
    phone: str  # E.164


class Budget:
    """The run's limits: a deadline and a number of requests, shared by every user."""

    def __init__(self, duration: float, requests: int) -> None:
        self.deadline = time.monotonic() + duration
        self._left = requests
        self._lock = threading.Lock()

    def take(self, count: int = 1) -> bool:
        if time.monotonic() >= self.deadline:
            return False
        with self._lock:
            if self._left < count:
                return False
            self._left -= count
            return True


# ------------------------------------------------------------------------------------------ the users


class Worker:
    """One user: a thread with its own client, acting until the budget runs out."""

    def __init__(
        self, stack: Stack, user: User, others: list[User], model: Model, rng: random.Random
    ) -> None:
        self.stack = stack
        self.user = user
        self.others = others
        self.model = model
        self.rng = rng
        self.http = _client(
            stack, stack.token(user.user_id, name=user.name, email=user.email, phone=user.phone)
        )
        self.seq = itertools.count(1)

    # -- plumbing ------------------------------------------------------------------------------

    def call(
        self, route: str, method: str, url: str, **kwargs: Any
    ) -> tuple[httpx.Response | None, oracle.Outcome]:
        """One request, recorded: the response (None when none came) and its interval and outcome."""
        start = time.monotonic() - self.model.t0
        try:
            if url.startswith("http"):
                response: httpx.Response | None = httpx.request(
                    method, url, timeout=REQUEST_TIMEOUT_SECONDS, **kwargs
                )
            else:
                response = self.http.request(method, url, **kwargs)
        except httpx.HTTPError:
            response = None
        end = time.monotonic() - self.model.t0
        status = response.status_code if response is not None else 0
        expected = status in EXPECTED.get(route, set()) or status == RATE_LIMITED
        if expected and (route, status) in EXPECTED_CODES and response is not None:
            expected = _error_code(response) in EXPECTED_CODES[(route, status)]
        with self.model.lock:
            self.model.requests.append(RequestRecord(route, status, start, end, expected))
        if response is None or status >= 500:
            ok: bool | None = None
        else:
            ok = 200 <= status < 300
        return response, oracle.Outcome(start, end, ok)

    def change(self, user: str, kb: str, effect: oracle.Effect, outcome: oracle.Outcome, what: str) -> None:
        """Record a change for the oracle: a definite success, or an unknown outcome of an ``on`` change."""
        if outcome.ok is True:
            self.model.changes.append(oracle.Change(user, kb, effect, outcome.start, outcome.end, what))
        elif outcome.ok is None and effect == "on":
            # Unknown outcome: it may have landed, and (without an answer) may land at any later time.
            self.model.changes.append(oracle.Change(user, kb, "on", outcome.start, math.inf, what + "?"))

    # -- the loop ------------------------------------------------------------------------------

    def register(self, budget: Budget) -> None:
        if budget.take():
            self.call("PUT /me", "PUT", "/me")

    def run(self, budget: Budget) -> None:
        actions, weights = zip(*WEIGHTS.items(), strict=True)
        try:
            while True:
                action = self.rng.choices(actions, weights)[0]
                # An action with nothing to act on falls back to a create, else a recall; no budget
                # left ends the user.
                if (
                    not getattr(self, f"do_{action}")(budget)
                    and not self.do_create(budget)
                    and not self.do_recall(budget)
                ):
                    return
        except Exception:
            # A bug of the driver (or an answer it cannot read) must fail the run, not silently end a user.
            with self.model.lock:
                self.model.driver_errors.append(f"{self.user.user_id}: {traceback.format_exc()}")
        finally:
            self.http.close()

    # -- actions: each returns False when the budget is spent (or when it has nothing to act on) --

    def do_recall(self, budget: Budget) -> bool:
        if not budget.take():
            return False
        response, outcome = self.call(
            "POST /recall", "POST", "/recall", json={"query": QUERY, "limit": RECALL_LIMIT}
        )
        if response is not None and response.status_code == 200:
            items = response.json()["items"]
            markers = oracle.markers_in(f"{item['title']}\n{item['content']}" for item in items)
            with self.model.lock:
                self.model.recalls.append(
                    oracle.Recall(self.user.user_id, outcome.start, outcome.end, markers, len(items))
                )
        return True

    def do_list(self, budget: Budget) -> bool:
        if not budget.take():
            return False
        self.call("GET /knowledge-bases", "GET", "/knowledge-bases")
        return True

    def do_create(self, budget: Budget) -> bool:
        with self.model.lock:
            if len(self.model.owned(self.user.user_id)) >= MAX_OWNED_KBS:
                return False
        if not budget.take():
            return False
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        name = f"load {self.user.name} {next(self.seq)}"
        response, outcome = self.call(
            "POST /knowledge-bases", "POST", "/knowledge-bases", json={"name": name}, headers=headers
        )
        with self.model.lock:
            if response is not None and response.status_code == 201:
                kb_id = response.json()["id"]
                marker = oracle.MARKER_PREFIX + secrets.token_hex(6)
                self.model.kbs[kb_id] = Kb(kb_id, self.user.user_id, marker, outcome)
                self.model.markers[marker] = kb_id
                self.change(self.user.user_id, kb_id, "on", outcome, "create")
                self.model.believed_recall[(self.user.user_id, kb_id)] = True
            elif outcome.ok is None:
                self.model.uncertain_creates += 1
        return True

    def _pick_owned(self, condition: Callable[[Kb], bool] = lambda kb: True) -> Kb | None:
        with self.model.lock:
            candidates = [kb for kb in self.model.owned(self.user.user_id) if condition(kb)]
        return self.rng.choice(candidates) if candidates else None

    def do_upload(self, budget: Budget) -> bool:
        kb = self._pick_owned(lambda kb: sum(not u.deleted for u in kb.uploads.values()) < MAX_FILES_PER_KB)
        if kb is None or not budget.take(2):
            return False
        n = next(self.seq)
        filename = f"{kb.marker} note {n}.txt"
        text = (
            f"{kb.marker} loadprobe quarterly roadmap, note {n} of {self.user.name}. "
            f"Marker {kb.marker} names the knowledge base this note belongs to.\n"
        ).encode()
        response, _ = self.call(
            "POST /knowledge-bases/{kb}/uploads",
            "POST",
            f"/knowledge-bases/{kb.kb_id}/uploads",
            json={"filename": filename, "size_bytes": len(text)},
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
        if response is None or response.status_code != 201:
            return True
        ticket = response.json()
        upload = Upload(ticket["upload_id"], filename)
        with self.model.lock:
            kb.uploads[upload.upload_id] = upload
        content_type = str(ticket["fields"].get("Content-Type", "text/plain"))
        posted, outcome = self.call(
            "POST <presigned S3 POST>",
            "POST",
            ticket["url"],
            data=ticket["fields"],
            files={"file": (filename, text, content_type)},
        )
        if posted is not None and posted.status_code == 204:
            with self.model.lock:
                upload.stored = True
                self.model.documents_since.setdefault(kb.kb_id, outcome.end)
        return True

    def do_share(self, budget: Budget) -> bool:
        kb = self._pick_owned()
        if kb is None or not budget.take():
            return False
        reader = self.rng.choice(self.others)
        form = self.rng.choice(("user_id", "phone", "email"))
        if form == "user_id":
            identifier = reader.user_id
        elif form == "email":
            identifier = reader.email.upper() if self.rng.random() < 0.3 else reader.email
        else:
            national = reader.phone.removeprefix("+86")
            identifier = self.rng.choice(
                (reader.phone, national, f"{national[:3]} {national[3:7]} {national[7:]}")
            )
        response, outcome = self.call(
            "POST /knowledge-bases/{kb}/members",
            "POST",
            f"/knowledge-bases/{kb.kb_id}/members",
            json={"identifier": identifier},
        )
        if response is not None and response.status_code == RATE_LIMITED:
            return True
        with self.model.lock:
            if outcome.ok is not False:
                self.model.shares[(reader.user_id, kb.kb_id)].append(outcome)
                self.change(reader.user_id, kb.kb_id, "on", outcome, "share")
        return True

    def do_revoke(self, budget: Budget) -> bool:
        with self.model.lock:
            pairs = [
                (kb, other)
                for kb in self.model.owned(self.user.user_id)
                for other in self.others
                if self.model.believed_member(other.user_id, kb.kb_id)
            ]
        if not pairs or not budget.take():
            return False
        kb, reader = self.rng.choice(pairs)
        self._remove(kb, reader.user_id, "revoke")
        return True

    def do_leave(self, budget: Budget) -> bool:
        with self.model.lock:
            shared = [kb for kb in self.model.visible(self.user.user_id) if kb.owner != self.user.user_id]
        if not shared or not budget.take():
            return False
        self._remove(self.rng.choice(shared), self.user.user_id, "leave")
        return True

    def _remove(self, kb: Kb, reader: str, what: str) -> None:
        _, outcome = self.call(
            "DELETE /knowledge-bases/{kb}/members/{user}",
            "DELETE",
            f"/knowledge-bases/{kb.kb_id}/members/{reader}",
        )
        with self.model.lock:
            if outcome.ok is not False:
                self.model.removals[(reader, kb.kb_id)].append(outcome)
            self.change(reader, kb.kb_id, "off", outcome, what)

    def do_toggle(self, budget: Budget) -> bool:
        me = self.user.user_id
        with self.model.lock:
            visible = self.model.visible(me)
        if not visible or not budget.take():
            return False
        kb = self.rng.choice(visible)
        with self.model.lock:
            enabled = not self.model.believed_recall.get((me, kb.kb_id), True)
        _, outcome = self.call(
            "PUT /knowledge-bases/{kb}/recall",
            "PUT",
            f"/knowledge-bases/{kb.kb_id}/recall",
            json={"enabled": enabled},
        )
        with self.model.lock:
            self.model.toggles[(me, kb.kb_id)].append((outcome, enabled))
            if outcome.ok:
                self.model.believed_recall[(me, kb.kb_id)] = enabled
            self.change(
                me, kb.kb_id, "on" if enabled else "off", outcome, f"toggle-{'on' if enabled else 'off'}"
            )
        return True

    def do_delete_file(self, budget: Budget) -> bool:
        kb = self._pick_owned(lambda kb: any(u.stored and not u.deleted for u in kb.uploads.values()))
        if kb is None or not budget.take(2):
            return False
        response, _ = self.call(
            "GET /knowledge-bases/{kb}/files", "GET", f"/knowledge-bases/{kb.kb_id}/files"
        )
        if response is None or response.status_code != 200:
            return True
        files = [
            f
            for f in response.json()["files"]
            if f["id"].startswith("fi_") and f.get("upload_id") in kb.uploads
        ]
        if not files:
            return True
        chosen = self.rng.choice(files)
        _, outcome = self.call(
            "DELETE /knowledge-bases/{kb}/files/{file}",
            "DELETE",
            f"/knowledge-bases/{kb.kb_id}/files/{chosen['id']}",
        )
        with self.model.lock:
            upload = kb.uploads[chosen["upload_id"]]
            upload.file_id = chosen["id"]
            if outcome.ok is not False:
                upload.deleted = True if outcome.ok else None
        return True

    def do_delete_kb(self, budget: Budget) -> bool:
        kb = self._pick_owned()
        if kb is None or not budget.take():
            return False
        _, outcome = self.call("DELETE /knowledge-bases/{kb}", "DELETE", f"/knowledge-bases/{kb.kb_id}")
        with self.model.lock:
            if outcome.ok is True:
                kb.deleted = True
                self.change(oracle.ANY_USER, kb.kb_id, "off", outcome, "delete-kb")
            elif outcome.ok is None:
                kb.deleted = None
        return True


# ------------------------------------------------------------------------------------ after the run


def _get(http: httpx.Client, path: str) -> Any:
    response = http.get(path)
    response.raise_for_status()
    return response.json()


def _client(stack: Stack, token: str) -> httpx.Client:
    """A client of the stack's API holding ``token``."""
    return httpx.Client(
        base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_TIMEOUT_SECONDS
    )


def _clients(stack: Stack, users: list[User]) -> dict[str, httpx.Client]:
    return {u.user_id: _client(stack, stack.token(u.user_id)) for u in users}


def settle_ingest(clients: dict[str, httpx.Client], model: Model, timeout: float) -> bool:
    """Wait until no live KB has a stored upload still uploading or processing; False on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        busy = False
        for kb in list(model.kbs.values()):
            if kb.deleted is not False:
                continue
            stored = {u.upload_id for u in kb.uploads.values() if u.stored}
            files = _get(clients[kb.owner], f"/knowledge-bases/{kb.kb_id}/files")["files"]
            if any(
                f["status"] in ("uploading", "processing") and f.get("upload_id") in stored for f in files
            ):
                busy = True
                break
        if not busy:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def check_final_lists(
    clients: dict[str, httpx.Client], users: list[User], model: Model
) -> tuple[list[oracle.Violation], dict[str, set[str]], int]:
    """The server's lists against the model: violations, live files by KB (upload ids), and how many
    (user, KB) pairs the model could not determine (an unknown outcome or an overlap)."""
    violations: list[oracle.Violation] = []
    undetermined = 0
    live = {kb_id: kb for kb_id, kb in model.kbs.items() if kb.deleted is False}
    uncertain = {kb_id for kb_id, kb in model.kbs.items() if kb.deleted is None}
    live_files: dict[str, set[str]] = {}
    for user in users:
        me = user.user_id
        listed = {item["id"]: item for item in _get(clients[me], "/knowledge-bases")["items"]}
        expected: dict[str, tuple[str, bool]] = {}
        skip: set[str] = set(uncertain)
        for kb_id, kb in live.items():
            if kb.owner == me:
                setting = oracle.recall_setting_after(kb.created, model.toggles[(me, kb_id)])
                role = "owner"
            else:
                try:
                    member = oracle.membership_after(model.shares[(me, kb_id)], model.removals[(me, kb_id)])
                except ValueError as error:
                    violations.append(oracle.Violation("membership", f"{me} on {kb_id}: {error}"))
                    skip.add(kb_id)
                    continue
                if member is None:
                    skip.add(kb_id)
                    undetermined += 1
                    continue
                if not member:
                    continue
                last_share = max((o for o in model.shares[(me, kb_id)] if o.ok), key=lambda o: o.end)
                setting = oracle.recall_setting_after(last_share, model.toggles[(me, kb_id)])
                role = "reader"
            if setting is None:
                undetermined += 1
            expected[kb_id] = (
                role,
                bool(setting) if setting is not None else listed.get(kb_id, {}).get("recall"),
            )
        violations += oracle.compare_sets(
            "grant",
            f"{me}'s KB list (kb, role)",
            {(kb_id, role) for kb_id, (role, _) in expected.items()},
            {(kb_id, item["role"]) for kb_id, item in listed.items() if kb_id not in skip},
        )
        model.final_counts["grants"] += len(expected)
        for kb_id, (_, setting) in expected.items():
            if kb_id in listed and listed[kb_id]["recall"] != setting:
                violations.append(
                    oracle.Violation(
                        "recall-setting",
                        f"{me} on {kb_id}: recall {listed[kb_id]['recall']}, the model says {setting}",
                    )
                )
    for kb_id, kb in live.items():
        owner = clients[kb.owner]
        members = {m["user_id"] for m in _get(owner, f"/knowledge-bases/{kb_id}/members")["items"]}
        readers: set[str] = {kb.owner}
        unknown: set[str] = set()
        for user in users:
            if user.user_id == kb.owner:
                continue
            try:
                member = oracle.membership_after(
                    model.shares[(user.user_id, kb_id)], model.removals[(user.user_id, kb_id)]
                )
            except ValueError:
                member = None
            if member is None:
                unknown.add(user.user_id)
            elif member:
                readers.add(user.user_id)
        violations += oracle.compare_sets("member", f"members of {kb_id}", readers, members - unknown)
        model.final_counts["members"] += len(readers)
        model.final_counts["live KBs"] += 1
        files = _get(owner, f"/knowledge-bases/{kb_id}/files")["files"]
        listed_uploads = {f.get("upload_id"): f for f in files}
        unsure = {u.upload_id for u in kb.uploads.values() if u.deleted is None}
        want = {u.upload_id for u in kb.uploads.values() if u.stored and u.deleted is False}
        never_posted = {u.upload_id for u in kb.uploads.values() if not u.stored}
        violations += oracle.compare_sets(
            "file", f"files of {kb_id}", want, set(listed_uploads) - never_posted - unsure
        )
        for upload_id in want & set(listed_uploads):
            status = listed_uploads[upload_id]["status"]
            if status != "available":
                reason = listed_uploads[upload_id].get("reason")
                violations.append(
                    oracle.Violation("file-not-available", f"{kb_id}: {upload_id} is {status} ({reason})")
                )
        model.final_counts["files"] += len(want)
        live_files[kb_id] = {
            str(f["upload_id"]) for f in files if f["id"].startswith("fi_") and f.get("upload_id")
        }
    return violations, live_files, undetermined


def check_residue(
    stack: Stack, live_files: dict[str, set[str]], timeout: float
) -> tuple[list[oracle.Violation], int]:
    """Run the reconciler, then wait for MemOS to hold exactly the live KBs and files; the last
    comparison's violations and how many reconciler runs it took."""
    deadline = time.monotonic() + timeout
    runs = 0
    while True:
        reply = stack.reconcile()
        runs += 1
        if "errorType" in reply:
            return [oracle.Violation("reconcile", f"the reconciler failed: {reply}")], runs
        violations = oracle.memos_residue(stack.memos_state(), live_files)
        if not violations or time.monotonic() > deadline:
            return violations, runs
        time.sleep(2)


# ----------------------------------------------------------------------------------------- reporting


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of non-empty ``values``."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class LoadReport:
    settings: LoadSettings
    elapsed: float
    requests: list[RequestRecord]
    scope: oracle.ScopeCheck
    violations: list[oracle.Violation]
    undetermined: int
    reconcile_runs: int
    limits: dict[str, str]
    stack_log: Path | None = None
    notes: list[str] = field(default_factory=list)
    final_counts: dict[str, int] = field(default_factory=dict)
    driver_errors: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[RequestRecord]:
        return [r for r in self.requests if not r.expected]

    @property
    def rate_limited(self) -> int:
        return sum(1 for r in self.requests if r.status == RATE_LIMITED)

    @property
    def ok(self) -> bool:
        return not self.violations and not self.errors and not self.driver_errors

    def table(self) -> str:
        by_route: dict[str, list[RequestRecord]] = defaultdict(list)
        for record in self.requests:
            by_route[record.route].append(record)
        header = f"| {'route':<45} | {'requests':>8} | {'p50 ms':>7} | {'p99 ms':>7} | {'429':>4} | {'errors':>6} |"
        rule = "|" + "|".join("-" * len(cell) for cell in header.split("|")[1:-1]) + "|"
        lines = [header, rule]
        for route in sorted(by_route, key=lambda r: -len(by_route[r])):
            records = by_route[route]
            latencies = [(r.end - r.start) * 1000 for r in records]
            lines.append(
                f"| {route:<45} | {len(records):>8} | {percentile(latencies, 50):>7.0f} | "
                f"{percentile(latencies, 99):>7.0f} | {sum(r.status == RATE_LIMITED for r in records):>4} | "
                f"{sum(not r.expected for r in records):>6} |"
            )
        every = [(r.end - r.start) * 1000 for r in self.requests] or [0.0]
        lines.append(
            f"| {'all':<45} | {len(self.requests):>8} | {percentile(every, 50):>7.0f} | "
            f"{percentile(every, 99):>7.0f} | {self.rate_limited:>4} | {len(self.errors):>6} |"
        )
        return "\n".join(lines)

    def render(self) -> str:
        s = self.settings
        rps = len(self.requests) / self.elapsed if self.elapsed else 0.0
        lines = [
            f"make load: {s.users} users, {self.elapsed:.1f} s (limit {s.duration:g} s, {s.requests} requests), "
            f"seed {s.seed}, limits {self.limits or 'as in template.yaml'}"
            + (f", FAULT {s.fault}" if s.fault else ""),
            "",
            self.table(),
            "",
            f"throughput: {rps:.1f} requests/s; errors (5xx, no answer, unexpected status): {len(self.errors)}; "
            f"rate limited (429): {self.rate_limited}",
        ]
        statuses: dict[tuple[str, int], int] = defaultdict(int)
        for record in self.errors:
            statuses[(record.route, record.status)] += 1
        lines += [
            f"  error: {route} -> {status or 'no answer'} x{n}"
            for (route, status), n in sorted(statuses.items())
        ]
        sc = self.scope
        lines += [
            f"oracle: {sc.recalls} recalls, {sc.excerpts} excerpts, {sc.attributed} (recall, KB) pairs returned "
            f"and checked, {sc.must_exclude} exclusions required of KBs with documents "
            f"({', '.join(f'{what} {n}' for what, n in sc.must_exclude_by.most_common()) or 'none'}); "
            f"{self.undetermined} final (user, KB) states undetermined; reconciler runs: {self.reconcile_runs}",
            *self.notes,
        ]
        if self.settings.final_checks:
            c = Counter(self.final_counts)
            lines.append(
                f"after the run: {c['grants']} grants (role, recall), {c['members']} members and {c['files']} "
                f"files of {c['live KBs']} live KBs compared with the model; MemOS compared after the reconciler"
            )
        shown = self.violations[:20]
        lines += [f"  VIOLATION {v}" for v in shown]
        if len(self.violations) > len(shown):
            lines.append(f"  ... and {len(self.violations) - len(shown)} more")
        lines += [f"  DRIVER ERROR {error}" for error in self.driver_errors]
        verdict = "PASS" if self.ok else "FAIL"
        lines.append(f"verdict: {verdict} ({len(self.violations)} violations, {len(self.errors)} errors)")
        if not self.ok and self.stack_log is not None:
            lines.append(f"stack log: {self.stack_log}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------- the run


def make_users(count: int, tag: str) -> list[User]:
    return [
        User(
            user_id=f"load-{tag}-{i}",
            name=f"User{i}",
            email=f"load-{tag}-{i}@example.com",
            phone=f"+86139{int(tag, 16) % 10000:04d}{i:04d}",
        )
        for i in range(count)
    ]


def run(settings: LoadSettings, stack: Stack | None = None) -> LoadReport:
    """Start the stack, run the load, check the oracle, stop the stack; the report.

    With ``stack`` (``start_stack``), run on it and leave it running; ``settings.fault`` then breaks it
    before the load (for good: its users are new, so a later run still checks only its own).
    """
    if settings.seed is None:
        settings.seed = random.SystemRandom().randrange(1_000_000)
    if stack is not None:
        if settings.fault:
            stack.break_recall_scope()
        return _run_on(stack, settings)
    workdir = settings.workdir or Path(tempfile.mkdtemp(prefix="memmy-load-"))
    workdir.mkdir(parents=True, exist_ok=True)
    stack = start_stack(workdir, settings)
    try:
        report = _run_on(stack, settings)
    finally:
        stack.stop()
    if report.ok and settings.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)  # kept, with the stack's log, when something failed
        report.stack_log = None
    return report


def _run_on(stack: Stack, settings: LoadSettings) -> LoadReport:
    seed = settings.seed or 0
    tag = f"{seed % 0xFFFF:04x}"
    users = make_users(settings.users, tag)
    model = Model()
    workers = [
        Worker(stack, user, [u for u in users if u is not user], model, random.Random(seed * 1000 + i))
        for i, user in enumerate(users)
    ]
    budget = Budget(settings.duration, settings.requests)
    started = time.monotonic()
    for worker in workers:
        worker.register(budget)
    threads = [threading.Thread(target=w.run, args=(budget,), name=f"load-{w.user.user_id}") for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    scope = oracle.check_scope(model.changes, model.recalls, model.markers, model.documents_since)
    violations = list(scope.violations)
    notes: list[str] = []
    if model.uncertain_creates:
        notes.append(
            f"  note: {model.uncertain_creates} creates of unknown outcome (their MemOS KBs may remain)"
        )
    undetermined = runs = 0
    if settings.final_checks:
        clients = _clients(stack, users)
        try:
            if not settle_ingest(clients, model, settings.settle_seconds):
                notes.append(f"  note: uploads still in flight after {settings.settle_seconds:g} s")
            final, live_files, undetermined = check_final_lists(clients, users, model)
            violations += final
        finally:
            for client in clients.values():
                client.close()
        residue, runs = check_residue(stack, live_files, settings.settle_seconds)
        violations += residue
    else:
        notes.append("  note: final checks (lists, files, MemOS residue) skipped")
    return LoadReport(
        settings=settings,
        elapsed=elapsed,
        requests=model.requests,
        scope=scope,
        violations=violations,
        undetermined=undetermined,
        final_counts=dict(model.final_counts),
        driver_errors=model.driver_errors,
        reconcile_runs=runs,
        limits=stack.limits,
        stack_log=stack.log_path,
        notes=notes,
    )


def main(argv: list[str] | None = None) -> int:
    defaults = LoadSettings.from_environment()
    parser = argparse.ArgumentParser(prog="python -m bench.load", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--duration", type=float, default=defaults.duration, help="seconds of load (LOAD_DURATION)"
    )
    parser.add_argument(
        "--requests", type=int, default=defaults.requests, help="request budget (LOAD_REQUESTS)"
    )
    parser.add_argument("--users", type=int, default=defaults.users, help="concurrent users (LOAD_USERS)")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="random seed (LOAD_SEED)")
    parser.add_argument(
        "--settle-seconds",
        type=float,
        default=defaults.settle_seconds,
        help="how long to wait for the ingest and the cleanups after the load (LOAD_SETTLE_SECONDS)",
    )
    parser.add_argument("--keep-limits", action="store_true", help="keep template.yaml's abuse limits")
    parser.add_argument("--fault", choices=FAULTS, help="break the service on purpose")
    parser.add_argument(
        "--workdir", type=Path, help="where the stack's log and home go (default: a temp dir)"
    )
    # Each option is named after the LoadSettings field it sets.
    report = run(LoadSettings(**vars(parser.parse_args(argv))))
    print(report.render(), flush=True)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
