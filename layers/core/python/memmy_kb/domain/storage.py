"""The storage vocabulary the ports speak: what a write found, and the upload bucket's objects and keys.

The store ports (``memmy_kb.domain.ports``) report what stopped a write with the errors below, in storage
terms, never as an HTTP answer; the domain translates them into refusals (``memmy_kb.errors``). Each names
the item concerned in ``item``, so the domain can tell "the grant already exists" from "the KB is gone"
without knowing how a transaction was assembled.

``StoreUnavailable`` is the other kind of failure: the table, the bucket, the state machine or the queue
did not answer (throttled, a 5xx, a connection or read timeout), which says nothing about the data (so it
is no ``StoreError``: no item stopped anything, and no refusal may be made of it). The
adapters translate those at their boundary; the same call may succeed if tried again later. Anything else
an adapter lets through (access denied, a malformed request) is a bug or a misconfiguration.

The upload bucket's object keys never contain a user's filename: ``uploads/<kb>/<upload>`` is where a
client's presigned POST puts the bytes (the bucket notifies the ingest queue for this prefix only),
``verified/<kb>/<upload>`` is the server-side copy of the exact bytes the ingest verified, which MemOS
fetches for large files. Every read of an object is pinned to the ETag it was first seen with, so an
object replaced meanwhile makes the read fail (``ObjectChanged``) instead of mixing two versions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from memmy_kb.records import RequestRecord

# The item families of the table, as the errors name them.
Item = Literal[
    "kb", "grant", "member_count", "folder", "folders", "file", "upload", "profile", "cleanup", "blocked", "daily",
    "kb_count", "attempts", "kb_files", "kb_bytes", "request",
    # Teams (memmy_kb.domain.ports.teams): a team's META, a membership or invitation, a member's teams
    # counter, the team's seats (members and invitations), the team changed hands, the inviter's role.
    "team", "membership", "teams", "members", "owner", "inviter",
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


class StoreUnavailable(Exception):
    """A storage service did not answer just now (throttled, failing, unreachable): nothing is known to have
    happened or not, and trying again later may succeed. ``service`` names which one ("table", "bucket",
    "state machine", "queue"), ``reason`` the AWS error code or the connection failure."""

    def __init__(self, service: str, reason: str) -> None:
        super().__init__(f"{service} unavailable: {reason}")
        self.service = service
        self.reason = reason


# -- the upload bucket -------------------------------------------------------------------------------

UPLOAD_PREFIX: Final = "uploads/"
VERIFIED_PREFIX: Final = "verified/"
# Ids are minted by the service (``kb_<hex>``, ``up_<hex>``); anything else under the prefix is not ours.
_UPLOAD_KEY = re.compile(r"^uploads/(kb_[0-9a-f]{1,64})/(up_[0-9a-f]{1,64})$")


def upload_object_key(kb_id: str, upload_id: str) -> str:
    """Where the client's POST puts an upload's bytes (the presigned policy pins exactly this key)."""
    return f"{UPLOAD_PREFIX}{kb_id}/{upload_id}"


def verified_object_key(kb_id: str, upload_id: str) -> str:
    """Where the verified copy of a large upload lives while MemOS fetches it."""
    return f"{VERIFIED_PREFIX}{kb_id}/{upload_id}"


def parse_upload_key(key: str) -> tuple[str, str] | None:
    """``(kb_id, upload_id)`` of an upload object key (already URL-decoded); None for any other key."""
    match = _UPLOAD_KEY.match(key)
    return (match.group(1), match.group(2)) if match else None


@dataclass(frozen=True)
class PresignedPost:
    """A browser-style POST: the form's target and the signed fields to send with the file."""

    url: str
    fields: dict[str, str]


@dataclass(frozen=True)
class ObjectInfo:
    """One version of an object: its key, size in bytes and ETag (which pins every later read)."""

    key: str
    size: int
    etag: str


class ObjectChanged(Exception):
    """The object was replaced (or removed) after it was first seen; the caller should start over."""
