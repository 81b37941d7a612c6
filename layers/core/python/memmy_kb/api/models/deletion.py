"""The deletions' answer: accepted, purged in the background."""

from __future__ import annotations

from memmy_kb.api.models.base import ApiModel


class CleanupAccepted(ApiModel):
    """A deletion accepted: gone in Memmy already, purged from MemOS and storage in the background."""

    cleanup_id: str
