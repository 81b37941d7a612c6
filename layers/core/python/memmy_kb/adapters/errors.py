"""The storage adapters' own errors: what a write found, in storage terms, never an HTTP answer.

The domain translates them into refusals (``memmy_kb.errors``). Each names the item concerned in
``item``, so the domain can tell "the grant already exists" from "the KB is gone" without knowing how a
transaction was assembled.
"""

from __future__ import annotations

from typing import Literal

from memmy_kb.records import RequestRecord

# The item families of the table, as the errors name them.
Item = Literal[
    "kb", "grant", "member_count", "folder", "folders", "file", "upload", "profile", "cleanup", "blocked", "daily",
    "kb_count", "attempts", "kb_files", "kb_bytes", "request",
]


class StoreError(Exception):
    """A storage operation did not happen; ``item`` says which item stopped it."""

    def __init__(self, item: Item, detail: str = "") -> None:
        super().__init__(f"{item}: {detail}" if detail else item)
        self.item: Item = item


class AlreadyExists(StoreError):
    """A create found an item already at its key."""


class ItemMissing(StoreError):
    """An item the operation needs (to change, or to hold) does not exist, or is no longer the one read."""


class ConditionFailed(StoreError):
    """The item exists but no longer satisfies the operation's condition (a count, a state, a holder)."""


class RequestSeen(StoreError):
    """An ``Idempotency-Key`` record already holds the key: ``record`` is what it says (completed with its
    result, or still in progress), for the domain to answer the repeat from."""

    def __init__(self, record: RequestRecord) -> None:
        super().__init__("request", record.key_hash)
        self.record = record
