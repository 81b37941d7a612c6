"""``FingerprintStore`` in memory: one file version's fingerprints per (KB, file, version)."""

from __future__ import annotations

from collections.abc import Iterable

from memmy_kb.domain.fingerprints.store import FilePrints


class FakeFingerprintStore:
    """The fingerprints of file versions, by KB; ``fail`` makes every call raise it (a store that is down)."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str, int], FilePrints] = {}
        self.fail: Exception | None = None

    def _check(self) -> None:
        if self.fail is not None:
            raise self.fail

    def put_prints(self, record: FilePrints) -> None:
        self._check()
        self.items[(record.kb_id, record.file_id, record.version)] = record

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        self._check()
        return [record for (kb, _, _), record in sorted(self.items.items()) if kb == kb_id]

    def query_print_versions(self, kb_id: str) -> list[tuple[str, int]]:
        self._check()
        return [(file_id, version) for (kb, file_id, version) in sorted(self.items) if kb == kb_id]

    def delete_prints(self, kb_id: str, file_id: str, versions: Iterable[int] | None = None) -> None:
        self._check()
        wanted = None if versions is None else set(versions)
        for key in [k for k in self.items if k[:2] == (kb_id, file_id) and (wanted is None or k[2] in wanted)]:
            del self.items[key]

    def versions(self, kb_id: str, file_id: str) -> list[int]:
        """The versions of a file that have fingerprints (for a test's assertions)."""
        return sorted(v for (kb, f, v) in self.items if (kb, f) == (kb_id, file_id))
