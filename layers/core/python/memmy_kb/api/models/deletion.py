"""The deletions' answer: accepted, cleaned up in the background."""

from __future__ import annotations

from memmy_kb.api.models.base import ApiModel


class CleanupAccepted(ApiModel):
    """A deletion accepted: gone in Memmy already, cleaned up in MemOS and storage in the background."""

    cleanup_id: str
