"""``KnowledgeBaseStore`` (and ``GrantReader``) in memory, on the shared ``FakeTable``."""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.domain.ports.profiles import IdentifierKind
from memmy_kb.domain.storage import AlreadyExists, ConditionFailed, ItemMissing
from memmy_kb.records import (
    ActivityRecord,
    CountCap,
    GrantRecord,
    KnowledgeBaseRecord,
    ProfileRecord,
    RequestRecord,
    ShareReads,
    WindowCount,
)
from tests.support.fakes.profiles import FakeProfileStore
from tests.support.fakes.table import FakeTable, _activity_sk, _Transaction
from tests.support.fakes.team_shares import FakeTeamShares


class FakeKnowledgeBaseStore(FakeTeamShares):
    """``KnowledgeBaseStore`` as ``memmy_kb.adapters.dynamodb.knowledge_bases.DynamoKnowledgeBaseStore``."""

    def __init__(self, table: FakeTable | None = None) -> None:
        self.table = table if table is not None else FakeTable()

    def put_kb_with_owner_grant(
        self,
        kb: KnowledgeBaseRecord,
        owner_grant: GrantRecord,
        *,
        max_owned: int,
        request: RequestRecord | None,
    ) -> None:
        t = self.table
        txn = _Transaction()
        txn.add(("KB", kb.kb_id), kb.kb_id not in t.kbs, lambda: t.seed(kb))
        grant_key = (owner_grant.user_id, owner_grant.kb_id)
        txn.add(("USER", *grant_key), grant_key not in t.grants, lambda: t.seed(owner_grant))
        txn.add(("INTENT", kb.kb_id), True, t.drop_intent(kb.kb_id))
        cap = CountCap(name=f"kbs#{kb.owner_id}", limit=max_owned, expires_at=0)
        txn.add(("LIMIT", cap.name), t.under_cap(cap), t.count(cap))
        if request is not None:
            key = (request.operation, request.key_hash)
            held = t.requests.get(key)
            holds = held is not None and held.attempt == request.attempt and held.status == "in_progress"

            def complete() -> None:
                t.requests[key] = t.requests[key].model_copy(
                    update={"status": "completed", "result": request.result or ""}
                )

            txn.add(("IDEMPOTENCY", *key), holds, complete)
        failed = txn.run()
        if request is not None and len(txn) - 1 in failed:
            raise ConditionFailed("request", request.key_hash)
        if 3 in failed:
            raise ConditionFailed("kb_count", str(max_owned))
        if failed:
            raise AlreadyExists("kb", kb.kb_id)

    def get_kb(self, kb_id: str) -> KnowledgeBaseRecord | None:
        kb = self.table.kbs.get(kb_id)
        return kb.model_copy(deep=True) if kb else None

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]:
        kbs = {
            kb_id: kb.model_copy(deep=True)
            for kb_id in dict.fromkeys(kb_ids)
            if (kb := self.table.kbs.get(kb_id)) is not None
        }
        return kbs, FakeProfileStore(self.table).batch_get_profiles(user_ids)

    def read_share(
        self,
        owner_id: str,
        kb_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> ShareReads:
        t = self.table
        name, window = counter
        counts = t.counters.get(name, {})
        profile = t.profiles.get(user_id) if user_id is not None else None
        return ShareReads(
            owner_grant=self.get_grant(owner_id, kb_id),
            kb=self.get_kb(kb_id),
            claimants=t.lookups.get(identifier, frozenset()) if identifier else frozenset(),
            profile=profile.model_copy(deep=True) if profile else None,
            attempts=(counts.get(f"w{window}", 0), counts.get(f"w{window - 1}", 0)),
        )

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None:
        grant = self.table.grants.get((user_id, kb_id))
        return grant.model_copy(deep=True) if grant else None

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        """In sort-key order (``KB#<kb_id>``), as the Query returns them."""
        return [
            grant.model_copy(deep=True)
            for (uid, _), grant in sorted(self.table.grants.items())
            if uid == user_id
        ]

    def update_kb_name(self, kb_id: str, owner_id: str, name: str) -> KnowledgeBaseRecord:
        if not self.table.owns(kb_id, owner_id):
            raise ItemMissing("kb", kb_id)
        kb = self.table.kbs[kb_id].model_copy(update={"name": name})
        self.table.kbs[kb_id] = kb
        return kb.model_copy(deep=True)

    def update_grant_recall(self, user_id: str, kb_id: str, enabled: bool) -> GrantRecord:
        current = self.table.grants.get((user_id, kb_id))
        if current is None:
            raise ItemMissing("grant", kb_id)
        grant = current.model_copy(update={"recall": enabled})
        self.table.grants[(user_id, kb_id)] = grant
        return grant.model_copy(deep=True)

    def put_reader_grant(
        self,
        grant: GrantRecord,
        *,
        max_readers: int,
        daily: CountCap,
        activity: ActivityRecord,
        attempts: WindowCount | None = None,
    ) -> None:
        t = self.table
        key = (grant.user_id, grant.kb_id)
        kb = t.kbs.get(grant.kb_id)

        def count() -> None:
            meta = t.kbs[grant.kb_id]
            t.kbs[grant.kb_id] = meta.model_copy(
                update={
                    "member_count": meta.member_count + 1,
                    "readers": meta.readers | {grant.user_id},
                    "member_version": meta.member_version + 1,
                }
            )

        txn = _Transaction()
        txn.add(("USER", *key), key not in t.grants, lambda: t.seed(grant))
        has_room = kb is not None and kb.owner_id == grant.owner_id and kb.member_count < max_readers
        txn.add(("KB", grant.kb_id), has_room, count)
        reader = t.profiles.get(grant.user_id)
        txn.add(("PROFILE", grant.user_id), reader is None or grant.owner_id not in reader.blocked)
        txn.add(("LIMIT", daily.name), t.under_cap(daily), t.count(daily))
        attempts_at = 4
        if attempts is not None:
            txn.add(("LIMIT", attempts.name), t.window_has_room(attempts), t.count_window(attempts))
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if 0 in failed:
            raise AlreadyExists("grant", grant.user_id)
        if 1 in failed:
            if not t.owns(grant.kb_id, grant.owner_id):
                raise ItemMissing("kb", grant.kb_id)
            raise ConditionFailed("member_count", str(max_readers))
        if 2 in failed:
            raise ConditionFailed("blocked", grant.user_id)
        if attempts is not None and attempts_at in failed:
            raise ConditionFailed("attempts", attempts.name)
        if failed:
            raise ConditionFailed("daily", daily.name)

    def delete_reader_grant(self, kb_id: str, user_id: str, *, activity: ActivityRecord) -> None:
        t = self.table
        key = (user_id, kb_id)
        current = t.grants.get(key)

        def uncount() -> None:
            meta = t.kbs[kb_id]
            t.kbs[kb_id] = meta.model_copy(
                update={
                    "member_count": meta.member_count - 1,
                    "readers": meta.readers - {user_id},
                    "member_version": meta.member_version + 1,
                }
            )

        def delete() -> None:
            del t.grants[key]

        txn = _Transaction()
        is_reader = current is not None and current.role == "reader"
        txn.add(("USER", *key), is_reader, delete)
        txn.add(("KB", kb_id), kb_id in t.kbs, uncount)
        txn.add(("ACTIVITY", activity.kb_id, _activity_sk(activity)), True, t.log(activity))
        failed = txn.run()
        if 0 in failed:
            raise ItemMissing("grant", user_id)
        if failed:  # META is gone (the KB was deleted): the grant goes on its own
            delete()

    def query_kb_members(self, kb_id: str) -> list[GrantRecord]:
        """In GSI1's sort-key order (``USER#<user_id>``)."""
        return [
            grant.model_copy(deep=True)
            for (_, kid), grant in sorted(self.table.grants.items())
            if kid == kb_id
        ]
