"""The capacity of one KB (files and bytes, ``KbCapacity``): the refusal a write that found it full answers
with. The writes check the caps themselves, under a condition on META (docs/limits.md).
"""

from __future__ import annotations

from memmy_kb.errors import Conflict, DomainError, PayloadTooLarge
from memmy_kb.records import KbCapacity


def files_refused(capacity: KbCapacity) -> Conflict:
    return Conflict(
        f"A knowledge base can hold at most {capacity.max_files} files; delete some first.",
        code="kb_file_limit_reached",
    )


def bytes_refused(capacity: KbCapacity) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"A knowledge base can hold at most {_size(capacity.max_bytes)} of files; this file does not fit.",
        code="kb_storage_limit_reached",
    )


def capacity_refused(capacity: KbCapacity, which: str) -> DomainError:
    """The refusal for the cap a write found full: ``which`` is "kb_files" or "kb_bytes"."""
    return files_refused(capacity) if which == "kb_files" else bytes_refused(capacity)


def _size(count: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if count >= scale:
            return f"{count / scale:.3g} {unit}"
    return f"{count} bytes"
