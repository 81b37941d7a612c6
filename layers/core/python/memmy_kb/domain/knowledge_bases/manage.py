"""Creating, reading, renaming and listing knowledge bases, and each user's own recall switch."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from aws_lambda_powertools import Logger

from memmy_kb.domain.access import require_access, require_owner
from memmy_kb.domain.directory import VerifiedClaims, masked_contact
from memmy_kb.domain.engine import MemosApiKeyError, MemosError, MemosQuotaExceeded
from memmy_kb.domain.knowledge_bases.activity import new_activity
from memmy_kb.domain.knowledge_bases.activity import record as record_activity
from memmy_kb.domain.knowledge_bases.placement import place_kb
from memmy_kb.domain.knowledge_bases.team_reads import readable_grants, set_team_recall
from memmy_kb.domain.ports.activity import ActivityLog
from memmy_kb.domain.ports.engines import BackendSlots, KnowledgeEngine, KnowledgeEngines
from memmy_kb.domain.ports.knowledge_bases import CreateIntents, KnowledgeBaseStore
from memmy_kb.domain.ports.profiles import ProfileStore
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing, RequestSeen
from memmy_kb.errors import (
    Conflict,
    UpstreamUnavailable,
    idempotency_key_reused,
    kb_not_found,
    request_in_progress,
)
from memmy_kb.observability import metrics
from memmy_kb.records import GrantRecord, KnowledgeBaseRecord, ProfileRecord, RequestRecord, utc_now

logger = Logger(child=True)

# How long a create's intent item outlives it at most (the reconciler reports it long before).
INTENT_KEEP = timedelta(days=2)


@dataclass(frozen=True)
class KnowledgeBaseView:
    """A KB as one user sees it: the KB, that user's grant (role, recall) and the owner's display name."""

    kb: KnowledgeBaseRecord
    grant: GrantRecord
    owner_name: str
    # The owner's verified phone or email, masked (``138****8000``): a name alone cannot impersonate.
    owner_contact: str | None = None
    # The answer remembered for a repeated ``Idempotency-Key``, not a KB made now.
    replayed: bool = False


def new_kb_id() -> str:
    return "kb_" + os.urandom(12).hex()  # as ``secrets.token_hex``, without its imports


def memos_name_for(kb_id: str) -> str:
    """The name MemOS sees: our id, not the user's title (MemOS needs no user data to index files)."""
    return f"memmy:{kb_id}"


def create_knowledge_base(
    kbs: KnowledgeBaseStore,
    profiles: ProfileStore,
    memos: KnowledgeEngines,
    *,
    owner: VerifiedClaims,
    name: str,
    intents: CreateIntents,
    slots: BackendSlots,
    max_owned: int,
    request: RequestRecord | None,
    clock: Callable[[], datetime] = utc_now,
    new_id: Callable[[], str] = new_kb_id,
) -> KnowledgeBaseView:
    """Create the MemOS KB, then record META and the owner's grant (recall on) in one transaction.

    The KB goes to a MemOS backend with room (``memmy_kb.domain.knowledge_bases.placement``: a slot claimed after the
    intent, released again when MemOS certainly holds no KB for it); none has room: 503
    ``memos_quota_exhausted``. MemOS has no way to list a project's KBs, so its id is recorded right away; if our write fails the
    MemOS KB is deleted again rather than left where nothing can find it. An intent item is written
    first (``intents``) and removed by that transaction (or at once when MemOS certainly created
    nothing): one left behind is a create whose outcome nobody learned, which the reconciler reports.

    Round trips (docs/architecture.md, "Create"): one transaction before MemOS (the intent; the cap of
    ``max_owned`` KBs checked, so a full account is refused before MemOS is asked; the ``request``'s
    Idempotency-Key claimed, when the client sent one) and one after (META, the owner grant, the count
    held again, the intent removed, the key's answer stored). The answer's owner is the caller, described from the
    verified claims; the profile is read only when the token carries no name. A repeated key answers
    from its record (422 ``idempotency_key_reused`` with another body, 409 ``request_in_progress``).
    """
    kb_id = new_id()
    started = clock()
    if request is not None:
        request = request.model_copy(update={"attempt": kb_id})
    try:
        intents.put_create_intent(
            kb_id,
            memos_name_for(kb_id),
            started,
            int((started + INTENT_KEEP).timestamp()),
            owner_id=owner.user_id,
            max_owned=max_owned,
            request=request,
            now=int(started.timestamp()),
        )
    except ConditionFailed:
        raise _owned_limit(max_owned) from None
    except RequestSeen as seen:
        return _repeat(seen.record, request)
    backend, engine, memos_kb_id = _place_and_create(memos, slots, intents, kb_id, request)
    kb, grant = _new_records(kb_id, name, owner, backend, memos_kb_id, clock())
    try:
        view = _created_view(kb, grant, owner, profiles)
        answered = (
            request.model_copy(update={"status": "completed", "result": _dump_view(view)})
            if request
            else None
        )
        kbs.put_kb_with_owner_grant(kb, grant, max_owned=max_owned, request=answered)
    except ConditionFailed as err:
        _discard_memos_kb(engine, memos_kb_id, intents, kb_id, request, slots, backend)
        if err.item == "request":
            raise request_in_progress() from err
        raise _owned_limit(max_owned) from err
    except AlreadyExists as err:
        _discard_memos_kb(engine, memos_kb_id, intents, kb_id, request, slots, backend)
        raise Conflict("A knowledge base with this id already exists.") from err
    except Exception:
        _discard_memos_kb(engine, memos_kb_id, intents, kb_id, request, slots, backend)
        raise
    return view


def _new_records(
    kb_id: str, name: str, owner: VerifiedClaims, backend: str, memos_kb_id: str, now: datetime
) -> tuple[KnowledgeBaseRecord, GrantRecord]:
    """A new KB's META and its owner's grant (recall on), both naming its MemOS KB and backend."""
    kb = KnowledgeBaseRecord(
        kb_id=kb_id,
        name=name,
        owner_id=owner.user_id,
        owner_name=owner.name,
        memos_kb_id=memos_kb_id,
        memos_backend=backend,
        created_at=now,
    )
    grant = GrantRecord(
        user_id=owner.user_id,
        kb_id=kb_id,
        role="owner",
        recall=True,
        memos_kb_id=memos_kb_id,
        memos_backend=backend,
        owner_id=owner.user_id,
        granted_at=now,
    )
    return kb, grant


def _place_and_create(
    memos: KnowledgeEngines, slots: BackendSlots, intents: CreateIntents, kb_id: str, request: RequestRecord | None
) -> tuple[str, KnowledgeEngine, str]:
    """A slot claimed and the MemOS KB created there: ``(backend, its engine, the MemOS KB id)``.

    A backend whose MemOS refuses for its plan's quota (its ``max_kbs`` above what the project has left)
    is passed over: its slot freed, the next backend with room tried. Any other failure ends the create.
    """
    passed_over: set[str] = set()
    while True:
        try:
            backend = place_kb(memos, slots, kb_id, skip=passed_over)
        except MemosApiKeyError as err:
            # The secret lists no usable backend just now: nothing was claimed, MemOS was not asked.
            _abandon(intents, kb_id, request, keep_intent=False)
            logger.error("MemOS secret unusable", extra={"error": type(err).__name__})
            raise UpstreamUnavailable("The knowledge engine is unavailable; try again shortly.") from err
        if backend is None:
            _abandon(intents, kb_id, request, keep_intent=False)
            logger.error("every MemOS backend is full or draining", extra={"refused_by_memos": sorted(passed_over)})
            raise _quota_exhausted()
        try:
            engine = memos.engine(backend)
            memos_kb_id = engine.create_knowledgebase(memos_name_for(kb_id))
        except MemosApiKeyError as err:
            # The backend's key could not be read (the secret changed since placement): nothing was sent.
            _abandon(intents, kb_id, request, keep_intent=False)
            slots.release_slot(backend, kb_id)
            logger.error("MemOS key unusable", extra={"error": type(err).__name__, "memos_backend": backend})
            raise UpstreamUnavailable("The knowledge engine is unavailable; try again shortly.") from err
        except MemosQuotaExceeded as err:
            slots.release_slot(backend, kb_id)
            logger.error(
                "MemOS knowledge-base quota exhausted", extra={"memos_code": err.code, "memos_backend": backend}
            )
            passed_over.add(backend)
            continue
        except MemosError as err:
            # MemOS answered or was never reached: nothing to find, the intent and the slot go; else they stay.
            unknown = err.request_sent and err.code is None
            _abandon(intents, kb_id, request, keep_intent=unknown)
            if not unknown:
                slots.release_slot(backend, kb_id)
            logger.error(
                "MemOS create failed",
                extra={"memos_code": err.code, "error": type(err).__name__, "memos_backend": backend},
            )
            raise UpstreamUnavailable("The knowledge engine is unavailable; try again shortly.") from err
        if passed_over:
            # Created, but a project is fuller than its max_kbs says: alarmed as a 503 for its quota is
            # (the create's route counts those), so the operator lowers that backend's max_kbs.
            metrics.add_metric(name="MemosQuotaExhausted", unit="Count", value=len(passed_over))
        return backend, engine, memos_kb_id


def _created_view(
    kb: KnowledgeBaseRecord, grant: GrantRecord, owner: VerifiedClaims, profiles: ProfileStore
) -> KnowledgeBaseView:
    """The new KB as its owner sees it. The caller is the owner: the token's verified claims describe them
    (the name a ``PUT /me`` would register, the masked verified contact) without reading the profile."""
    if not owner.name:
        return _view(kb, grant, profiles.get_profile(owner.user_id))
    email, phone = owner.identifiers()
    return KnowledgeBaseView(
        kb=kb, grant=grant, owner_name=owner.name, owner_contact=masked_contact(phone, email)
    )


def _dump_view(view: KnowledgeBaseView) -> str:
    return json.dumps(
        {
            "kb": view.kb.model_dump(mode="json"),
            "grant": view.grant.model_dump(mode="json"),
            "owner_name": view.owner_name,
            "owner_contact": view.owner_contact,
        }
    )


def _repeat(seen: RequestRecord, request: RequestRecord | None) -> KnowledgeBaseView:
    """The answer to a repeated Idempotency-Key, from its record."""
    if request is None or seen.payload_hash != request.payload_hash:
        raise idempotency_key_reused()
    if seen.status != "completed" or not seen.result:
        raise request_in_progress()
    data = json.loads(seen.result)
    return KnowledgeBaseView(
        kb=KnowledgeBaseRecord.model_validate(data["kb"]),
        grant=GrantRecord.model_validate(data["grant"]),
        owner_name=data["owner_name"],
        owner_contact=data["owner_contact"],
        replayed=True,
    )


def _abandon(
    intents: CreateIntents, kb_id: str, request: RequestRecord | None, *, keep_intent: bool
) -> None:
    """Release the key (a retry may run) and, unless MemOS may hold the KB, drop the intent."""
    intents.abandon_create(kb_id, request=request, keep_intent=keep_intent)


def _quota_exhausted() -> UpstreamUnavailable:
    return UpstreamUnavailable("Knowledge bases cannot be created right now.", code="memos_quota_exhausted")


def _owned_limit(limit: int) -> Conflict:
    return Conflict(
        f"You can own at most {limit} knowledge bases; delete one first.", code="kb_limit_reached"
    )


def _discard_memos_kb(
    memos: KnowledgeEngine,
    memos_kb_id: str,
    intents: CreateIntents,
    kb_id: str,
    request: RequestRecord | None,
    slots: BackendSlots,
    backend: str,
) -> None:
    try:
        memos.delete_knowledgebase(memos_kb_id, delete_all=True)
    except MemosError:
        # Nothing references it and MemOS cannot list KBs: this is the one residue to alert on (its
        # intent stays for the reconciler to report).
        logger.exception("MemOS KB left behind after a failed create", extra={"memos_kb_id": memos_kb_id})
        _abandon(intents, kb_id, request, keep_intent=True)
        return
    _abandon(intents, kb_id, request, keep_intent=False)
    slots.release_slot(backend, kb_id)


def get_knowledge_base(
    kbs: KnowledgeBaseStore, profiles: ProfileStore, user_id: str, kb_id: str
) -> KnowledgeBaseView:
    """One KB as the caller sees it; 404 when the caller has no grant (no existence oracle)."""
    grant = require_access(kbs, user_id, kb_id)
    kb = kbs.get_kb(kb_id)
    if kb is None:
        raise kb_not_found()
    return _view(kb, grant, profiles.get_profile(kb.owner_id))


def rename_knowledge_base(
    kbs: KnowledgeBaseStore,
    profiles: ProfileStore,
    user_id: str,
    kb_id: str,
    name: str,
    *,
    log: ActivityLog,
    retention_days: int,
    clock: Callable[[], datetime] = utc_now,
) -> KnowledgeBaseView:
    """Rename (owner only), logged in ``log``. Only our record changes: MemOS knows the KB by id, not by
    this name."""
    grant = require_owner(kbs, user_id, kb_id)
    try:
        kb = kbs.update_kb_name(kb_id, user_id, name)
    except ItemMissing:
        raise kb_not_found() from None
    record_activity(log, new_activity("renamed", kb_id, user_id, name, clock(), retention_days))
    return _view(kb, grant, profiles.get_profile(kb.owner_id))


def set_recall(
    kbs: KnowledgeBaseStore, profiles: ProfileStore, user_id: str, kb_id: str, enabled: bool
) -> KnowledgeBaseView:
    """Turn the caller's own recall of a KB on or off; owners and readers alike, nobody else's.

    The grant's update is conditioned on the caller's grant existing, each membership's on the caller
    still being a member: the writes are also the access check (``memmy_kb.domain.access``). A KB read
    through teams has the choice set on each membership it is read through (and on the grant, if any).
    """
    try:
        direct: GrantRecord | None = kbs.update_grant_recall(user_id, kb_id, enabled)
    except ItemMissing:
        direct = None
    grant = set_team_recall(kbs, user_id, kb_id, enabled, direct=direct)
    kb = kbs.get_kb(kb_id)
    if kb is None:
        raise kb_not_found()
    return _view(kb, grant, profiles.get_profile(kb.owner_id))


def list_knowledge_bases(kbs: KnowledgeBaseStore, user_id: str) -> list[KnowledgeBaseView]:
    """The caller's owned and shared KBs, and those their teams share with them, each with the caller's
    role and recall setting: owned first.

    The owners' profiles come from the KB store's batched read, not from the profile store."""
    grants = readable_grants(kbs, user_id)
    # The grant carries the owner's id, so META items and owners' profiles come in one batched read.
    records, owners = kbs.batch_get_kbs_and_profiles((g.kb_id for g in grants), (g.owner_id for g in grants))
    views = [
        _view(records[g.kb_id], g, owners.get(records[g.kb_id].owner_id))
        for g in grants
        if g.kb_id in records
    ]
    views.sort(key=lambda v: (v.grant.role != "owner", v.kb.created_at, v.kb.kb_id))
    return views


def _view(kb: KnowledgeBaseRecord, grant: GrantRecord, owner: ProfileRecord | None) -> KnowledgeBaseView:
    name = owner.display_name if owner else kb.owner_name
    contact = masked_contact(owner.phone, owner.email) if owner else None
    return KnowledgeBaseView(kb=kb, grant=grant, owner_name=name or kb.owner_id, owner_contact=contact)
