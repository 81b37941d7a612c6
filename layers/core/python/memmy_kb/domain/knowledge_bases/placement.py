"""Where a new KB goes: a MemOS backend with room, through its conditional counter (docs/memos.md).

MemOS plans cap the KBs of an account, so one project holds at most ``max_kbs`` of ours; the service
grows past that by holding several backends (projects, each with its own key). A create claims a slot
on one of them (``BackendSlots.claim_slot``: a conditional update ``used < max_kbs``, so concurrent
creates never put more than ``max_kbs`` KBs on a backend) before MemOS is asked; draining backends take
none. The least full backend is tried first, so KBs spread; a claim refused by a concurrent create moves
on to the next.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memmy_kb.observability import put_backend_metrics

if TYPE_CHECKING:
    from collections.abc import Collection

    from memmy_kb.domain.engine import EngineBackend
    from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngines


def placement_order(backends: list[EngineBackend], used: dict[str, int]) -> list[EngineBackend]:
    """The backends that may take a KB (not draining, room left as read): least full first, then the most
    room, then by id."""
    open_ = [b for b in backends if not b.draining and b.max_kbs > 0 and used.get(b.id, 0) < b.max_kbs]
    return sorted(open_, key=lambda b: (used.get(b.id, 0) / b.max_kbs, used.get(b.id, 0) - b.max_kbs, b.id))


def capacity_used_percent(backends: list[EngineBackend], used: dict[str, int]) -> float:
    """How full the backends that take new KBs are together, in percent (100: a create would get 503).

    Draining backends count for neither side: their room is not on offer.
    """
    open_ = [b for b in backends if not b.draining]
    room = sum(b.max_kbs for b in open_)
    if room <= 0:
        return 100.0
    return round(100 * min(sum(min(used.get(b.id, 0), b.max_kbs) for b in open_), room) / room, 1)


def place_kb(
    memos: KnowledgeEngines, slots: BackendSlots, kb_id: str, *, skip: Collection[str] = ()
) -> str | None:
    """Claim a slot for ``kb_id`` on a backend with room (none of ``skip``: MemOS refused this create
    there) and return that backend's id; None when every backend is full, draining or skipped (the create
    answers 503 ``memos_quota_exhausted``)."""
    backends = [b for b in memos.backends() if b.id not in skip]
    used = slots.used_slots([b.id for b in backends])
    for backend in placement_order(backends, used):
        if slots.claim_slot(backend.id, kb_id, max_kbs=backend.max_kbs):
            used[backend.id] = used.get(backend.id, 0) + 1
            put_backend_metrics("MemosBackendKbsUsed", {backend.id: used[backend.id]})
            return backend.id
    return None
