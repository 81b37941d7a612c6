"""The ports of KBs and their grants: the reads every access decision rests on, the KB store, and a
create's intent while MemOS is called."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memmy_kb.domain.ports.team_shares import TeamShareStore

if TYPE_CHECKING:
    # Only signatures name these: a function taking a port (recall: ``GrantReader``) imports no model for it.
    from memmy_kb.domain.ports.profiles import IdentifierKind
    from memmy_kb.domain.ports.team_shares import Reach
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


class GrantReader(Protocol):
    """The reads every access decision rests on (strongly consistent)."""

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None: ...

    def query_grants(self, user_id: str) -> list[GrantRecord]: ...

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        """The caller's grants (with ``with_grants``) and memberships, and their teams' META
        (``memmy_kb.domain.ports.team_shares``)."""
        ...


class RecallSources(GrantReader, Protocol):
    """What attributed recall reads: the grants, and the KBs' names with their owners' profiles."""

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]: ...


class KnowledgeBaseStore(GrantReader, TeamShareStore, Protocol):
    """KB META items, the grants on them and their shares with teams: the authority for access and
    recall scope."""

    def put_kb_with_owner_grant(
        self,
        kb: KnowledgeBaseRecord,
        owner_grant: GrantRecord,
        *,
        max_owned: int,
        request: RequestRecord | None,
    ) -> None: ...

    def get_kb(self, kb_id: str) -> KnowledgeBaseRecord | None: ...

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]: ...

    def read_share(
        self,
        owner_id: str,
        kb_id: str,
        *,
        identifier: tuple[IdentifierKind, str] | None,
        user_id: str | None,
        counter: tuple[str, int],
    ) -> ShareReads: ...

    def update_kb_name(self, kb_id: str, owner_id: str, name: str) -> KnowledgeBaseRecord: ...

    def update_grant_recall(self, user_id: str, kb_id: str, enabled: bool) -> GrantRecord: ...

    def put_reader_grant(
        self,
        grant: GrantRecord,
        *,
        max_readers: int,
        daily: CountCap,
        activity: ActivityRecord,
        # Optional because the share really omits it: when the attempt was already counted apart (its
        # window filled since the read, or the share is retried after that), the grant is written
        # without counting it again.
        attempts: WindowCount | None = None,
    ) -> None: ...

    def delete_reader_grant(self, kb_id: str, user_id: str, *, activity: ActivityRecord) -> None: ...

    def query_kb_members(self, kb_id: str) -> list[GrantRecord]: ...


class CreateIntents(Protocol):
    """A KB create's intent while MemOS is called (with its KBs-owned check and Idempotency-Key claim), and
    the reconciler's read of the intents nobody finished (``memmy_kb.adapters.dynamodb.intents``)."""

    def put_create_intent(
        self,
        kb_id: str,
        memos_name: str,
        started_at: datetime,
        expires_at: int,
        *,
        owner_id: str,
        max_owned: int,
        request: RequestRecord | None,
        now: int,
    ) -> None: ...

    def delete_create_intent(self, kb_id: str) -> None: ...

    def abandon_create(self, kb_id: str, *, request: RequestRecord | None, keep_intent: bool) -> None: ...

    def query_stale_intents(self, before: datetime, limit: int) -> list[tuple[str, str]]: ...
