"""Where a file version's fingerprints are kept (``memmy_kb.domain.fingerprints.prints``): the port, and its item.

One item per file version, in the KB's partition (``PRINT#<file_id>#<version>``, beside its ``FILE#``): the
ingest writes it when it records a file or submits a replacement; recall reads a KB's items with one Query
(cached per environment, ``memmy_kb.domain.recall.file_attribution``); the old version's goes when the reconciler
sees MemOS has switched to the new one, a deleted file's with its cleanup, and the reconciler removes any
whose file is gone (``memmy_kb.domain.fingerprints.residue``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from memmy_kb.domain.fingerprints.prints import Fingerprints


@dataclass(frozen=True)
class FilePrints:
    """The fingerprints of one version of one file of a KB, and the file's MemOS id (None on an item
    written before it was kept): recall names a hit that gives its MemOS file id from it without another read."""

    kb_id: str
    file_id: str
    version: int
    prints: Fingerprints
    memos_file_id: str | None = None


class FingerprintStore(Protocol):
    """The fingerprints of a KB's file versions."""

    def put_prints(self, record: FilePrints) -> None:
        """Store (or overwrite) one file version's fingerprints."""
        ...

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        """Every file version's fingerprints in the KB (an eventually consistent read is enough)."""
        ...

    def query_print_versions(self, kb_id: str) -> list[tuple[str, int]]:
        """(file id, version) of every file version with fingerprints in the KB, without the fingerprints
        (the reconciler's sweep)."""
        ...

    def delete_prints(self, kb_id: str, file_id: str, versions: Iterable[int] | None = None) -> None:
        """Delete the file's fingerprints: of ``versions``, or of every version when None."""
        ...
