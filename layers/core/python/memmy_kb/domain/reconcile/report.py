"""What one reconcile run reports (``memmy_kb.domain.reconcile.repair``): a count per action, each in words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

# A cleanup restarted more often than this is reported stuck.
STUCK_ATTEMPTS: Final = 5


# Each count a run reports (its metric's name), in words for a person: ``memmy-local reconcile`` prints
# them. tests/unit/domain/reconcile/test_reconcile.py checks that every count reported here has one.
REPORT_KINDS: Final = {
    "CleanupRestarted": "deletions restarted",
    "CleanupStuck": f"deletions still failing after {STUCK_ATTEMPTS} attempts (alarmed)",
    "UploadResolvedSubmitted": "uploads of unknown outcome found in MemOS and recorded",
    "UploadResolvedRejected": "uploads of unknown outcome marked failed",
    "UploadRequeued": "uploads of unknown outcome handed to the ingest again",
    "UploadExpired": "uploads never completed, expired",
    "KbCreateOutcomeUnknown": "knowledge base creates of unknown MemOS outcome (alarmed)",
    "ResidueFound": "MemOS files no record claims",
    "ResidueRemoved": "MemOS files no record claims, removed",
    "ReplaceUnlocked": "files left marked by a replace no longer in flight, unmarked",
    "PrintsRemoved": "fingerprints of file versions gone or switched from, removed",
    "UploadObjectsRemoved": "upload objects nothing needs, removed from storage",
    "KbBackendUnknown": "KBs or uploads on a MemOS backend the secret no longer lists, skipped (put it back)",
}


@dataclass
class ReconcileReport:
    """What one run did, by action (also emitted as metrics; REPORT_KINDS says each in words)."""

    counts: dict[str, int] = field(default_factory=dict)
    # Per MemOS backend: KBs placed there and its cap; and the share of the open backends' room in use.
    backend_used: dict[str, int] = field(default_factory=dict)
    backend_max: dict[str, int] = field(default_factory=dict)
    capacity_used_percent: float | None = None

    def add(self, name: str, value: int = 1) -> None:
        """Count ``value`` more of ``name`` (nothing for 0)."""
        if value:
            self.counts[name] = self.counts.get(name, 0) + value
