"""``make bench``: the project's benchmarks, each printing figures measured in one run."""

from __future__ import annotations

import sys

from bench import import_time, ingest_memory, recall_scale, search_emulator


def main() -> int:
    search_emulator.run()
    import_time.run()
    ingest_memory.run()
    recall_scale.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
