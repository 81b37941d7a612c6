"""``make load``'s users: each a thread with its own HTTP client, acting at random until the budget runs out.

Every request is recorded (route, status, interval, whether the route may answer that status under this
workload), and every change a request may have made to someone's recall scope goes to the model for
the oracle, with an unknown outcome kept as possibly landed.
"""

from __future__ import annotations

import itertools
import math
import random
import secrets
import time
import traceback
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from bench import load_oracle as oracle
from bench.load_model import MAX_OWNED_KBS, RATE_LIMITED, Budget, Kb, Model, RequestRecord, Upload, User
from bench.load_stack_handle import REQUEST_TIMEOUT_SECONDS, Stack
from bench.load_worker_teams import TEAM_EXPECTED, TEAM_WEIGHTS, TeamActions

QUERY = "loadprobe quarterly roadmap"
RECALL_LIMIT = 25
MAX_FILES_PER_KB = 3


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
    **TEAM_WEIGHTS,
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
    **TEAM_EXPECTED,
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


class Worker(TeamActions):
    """One user: a thread with its own client, acting until the budget runs out."""

    def __init__(
        self, stack: Stack, user: User, others: list[User], model: Model, rng: random.Random
    ) -> None:
        self.stack = stack
        self.user = user
        self.others = others
        self.model = model
        self.rng = rng
        self.http = stack.client(
            stack.token(user.user_id, name=user.name, email=user.email, phone=user.phone)
        )
        # The presigned POSTs go to storage, without the API's token, on kept-alive connections: a client
        # per POST (httpx.request) built an SSL context each time, which cost the driver CPU and let its
        # memory creep up through a long run (7 MiB a minute at 60 users, about 2 with this client).
        self.storage = httpx.Client(timeout=REQUEST_TIMEOUT_SECONDS)
        self.seq = itertools.count(1)

    # -- plumbing ------------------------------------------------------------------------------

    def call(
        self, route: str, method: str, url: str, **kwargs: Any
    ) -> tuple[httpx.Response | None, oracle.Outcome]:
        """One request, recorded: the response (None when none came) and its interval and outcome."""
        start = time.monotonic() - self.model.t0
        try:
            if url.startswith("http"):
                response: httpx.Response | None = self.storage.request(method, url, **kwargs)
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

    def change(
        self,
        user: str,
        kb: str,
        effect: oracle.Effect,
        outcome: oracle.Outcome,
        what: str,
        via: str = oracle.DIRECT,
    ) -> None:
        """Record a change for the oracle: a definite success, or an unknown outcome of an ``on`` change."""
        if outcome.ok is True:
            self.model.changes.append(oracle.Change(user, kb, effect, outcome.start, outcome.end, what, via))
        elif outcome.ok is None and effect == "on":
            # Unknown outcome: it may have landed, and (without an answer) may land at any later time.
            self.model.changes.append(oracle.Change(user, kb, "on", outcome.start, math.inf, what + "?", via))

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
            self.close()

    def close(self) -> None:
        self.http.close()
        self.storage.close()

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
            # A toggle sets the grant and every membership through which the KB is read: all its ways.
            effect: oracle.Effect = "on" if enabled else "off"
            self.change(me, kb.kb_id, effect, outcome, f"toggle-{effect}", via=oracle.ALL_PATHS)
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
                for team in self.model.teams.values():
                    team.kbs.discard(kb.kb_id)  # the delete takes it off every team
                self.change(oracle.ANY_USER, kb.kb_id, "off", outcome, "delete-kb")
            elif outcome.ok is None:
                kb.deleted = None
        return True
