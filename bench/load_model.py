"""``make load``'s run settings and limits, its users, and the client-side model of what succeeded.

The ``Model`` is what the users' threads know succeeded (KBs, uploads, shares, removals, recall
switches) and the history the oracle (``bench.load_oracle``) reads; one lock guards all of it.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from bench import load_oracle as oracle
from bench.load_oracle_teams import TeamEvent

RATE_LIMITED = 429
MAX_OWNED_KBS = 3  # KBs one user owns at most at a time in this workload
# KBs one MemOS project holds: the plan's cap and the template's MEMOS_MAX_KBS for a single backend.
MEMOS_PROJECT_KBS = 100


def memos_projects(users: int) -> int:
    """MemOS projects (backends) the load's stack needs so that a create never finds them all full: room
    for twice the KBs the users may own at once (KBs being deleted hold their slot until their cleanup
    has run). One while it fits, the single key a deployment starts with; more, as a deployer adds them
    (docs/memos.md, "Backends")."""
    return max(1, math.ceil(users * MAX_OWNED_KBS * 2 / MEMOS_PROJECT_KBS))


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
    memos_qps: float | None = None  # the emulator's MemOS rate limit (memmy-local up --memos-qps)
    # Functions' settings put in the stack's template copy (bench.load_stack --set), e.g. RECALL_BURST.
    function_settings: dict[str, str] = field(default_factory=dict)
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
class TeamInfo:
    """A team as its users' threads believe it (what answered 2xx); the oracle reads the events instead."""

    team_id: str
    owner: str
    deleted: bool | None = False  # None: a delete of unknown outcome
    states: dict[str, str] = field(default_factory=dict)  # user -> "invited" or "member"
    kbs: set[str] = field(default_factory=set)  # the KBs shared with it


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
        self.teams: dict[str, TeamInfo] = {}
        self.team_events: list[TeamEvent] = []
        self.uncertain_team_creates: set[str] = set()  # users whose team creation has no answer
        self.requests: list[RequestRecord] = []
        self.final_counts: Counter[str] = Counter()  # what the checks after the run compared
        self.driver_errors: list[str] = []

    def live_teams(self) -> list[TeamInfo]:
        return [team for team in self.teams.values() if team.deleted is False]

    def owned(self, user: str) -> list[Kb]:
        return [kb for kb in self.kbs.values() if kb.owner == user and kb.deleted is False]

    def believed_member(self, reader: str, kb_id: str) -> bool:
        # .get, not [...]: indexing the defaultdicts stored an empty list for every (user, KB) pair ever
        # asked about, which grew the driver's memory through a long run.
        shares, removals = self.shares.get((reader, kb_id), []), self.removals.get((reader, kb_id), [])
        try:
            return bool(oracle.membership_after(shares, removals))
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
