"""``make load``'s probe: a short scripted story told in every run beside the random users.

The random mix reaches the exclusions that matter most only by chance: a user turning recall off on a KB
whose document has already been ingested and then recalling, or a user recalling while merely invited to
a team that holds such a KB. A short run on a slow machine may never do either, so an oracle meant to
catch a leak there would pass a broken service. The probe does both, every run:

1. A creates a KB, uploads a note and recalls until the note comes back (the ingest settled; at most
   ``INGEST_WAIT_SECONDS``);
2. A turns recall off for that KB and recalls: the note must not come back (the stack's fault
   ``recall-ignores-setting`` breaks this);
3. A creates a team, shares the KB with it and invites B, who does not answer; B recalls: the note must
   not come back (the fault ``team-invitation-reads`` breaks this).

A and B (``load-<tag>-probe-a``/``-b``) are users of their own: no random user shares with them or invites
them, so each action of ``Worker`` that picks at random has exactly one thing to pick. Every request goes
through ``Worker`` (recorded, its changes and team events in the model), so the oracle judges the probe's
recalls as it judges everyone's, and the checks after the run include the probe's KB, file and team.
A step the service refuses is a ``probe`` violation: the story could not be told, so the run proves less.
"""

from __future__ import annotations

import random
import time
import traceback

from bench import load_oracle as oracle
from bench.load_model import Budget, Kb, Model, User
from bench.load_stack_handle import Stack
from bench.load_worker import Worker

INGEST_WAIT_SECONDS = 60.0
POLL_SECONDS = 0.6  # under the recall limit's refill of 2 a second
PROBE_REQUESTS = 400  # the probe's own budget: the random users cannot spend it


def probe_users(tag: str) -> tuple[User, User]:
    """The probe's owner and invitee, named apart from the random users (``bench.load.make_users``)."""
    a, b = (
        User(
            user_id=f"load-{tag}-probe-{letter}",
            name=f"Probe{letter.upper()}",
            email=f"load-{tag}-probe-{letter}@example.com",
            phone=f"+86138{int(tag, 16) % 10000:04d}{index:04d}",
        )
        for index, letter in enumerate("ab")
    )
    return a, b


class Probe:
    """The scripted story on two workers of its own; ``run`` is a thread's target."""

    def __init__(self, stack: Stack, model: Model, users: tuple[User, User], seed: int) -> None:
        owner, invitee = users
        self.model = model
        self.owner = Worker(stack, owner, [invitee], model, random.Random(seed))
        self.invitee = Worker(stack, invitee, [owner], model, random.Random(seed + 1))
        self.violations: list[oracle.Violation] = []
        self.told = False  # every step was taken

    def run(self) -> None:
        budget = Budget(INGEST_WAIT_SECONDS + 60, PROBE_REQUESTS)
        try:
            self.owner.register(budget)
            self.invitee.register(budget)
            self.told = self._story(budget)
        except Exception:
            with self.model.lock:
                self.model.driver_errors.append(f"probe: {traceback.format_exc()}")
        finally:
            self.owner.close()
            self.invitee.close()

    def note(self) -> str:
        if self.told:
            return (
                "  probe: a note recalled by its owner, then recall turned off and recalled again, then the "
                "KB shared with a team and its invitee recalling before answering"
            )
        return "  probe: not told to the end (see its violation)"

    def _refused(self, step: str) -> bool:
        self.violations.append(oracle.Violation("probe", f"the probe's owner could not {step}"))
        return False

    def _story(self, budget: Budget) -> bool:
        a, me = self.owner, self.owner.user.user_id
        a.do_create(budget)
        with self.model.lock:
            owned = self.model.owned(me)
        if not owned:
            return self._refused("create its KB")
        kb = owned[0]
        a.do_upload(budget)
        if not any(upload.stored for upload in kb.uploads.values()):
            return self._refused("upload its note")
        if not self._recall_until_seen(kb, budget):
            return self._refused(f"recall its own note within {INGEST_WAIT_SECONDS:g} s of the upload")
        a.do_toggle(budget)
        with self.model.lock:
            if self.model.believed_recall.get((me, kb.kb_id)) is not False:
                return self._refused("turn recall off for its KB")
        a.do_recall(budget)  # step 2: the note must not come back
        a.do_team_create(budget)
        a.do_team_share(budget)
        a.do_team_invite(budget)
        b = self.invitee.user.user_id
        with self.model.lock:
            invited = [
                t for t in self.model.live_teams() if kb.kb_id in t.kbs and t.states.get(b) == "invited"
            ]
        if not invited:
            return self._refused("share its KB with a team of its own and invite the other probe user")
        self.invitee.do_recall(budget)  # step 3: the note must not come back
        return True

    def _recall_until_seen(self, kb: Kb, budget: Budget) -> bool:
        me = self.owner.user.user_id
        deadline = time.monotonic() + INGEST_WAIT_SECONDS
        while time.monotonic() < deadline:
            if not self.owner.do_recall(budget):
                return False
            with self.model.lock:
                last = next((r for r in reversed(self.model.recalls) if r.user == me), None)
            if last is not None and kb.marker in last.markers:
                return True
            time.sleep(POLL_SECONDS)
        return False
