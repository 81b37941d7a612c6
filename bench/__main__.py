"""``make bench``: the project's benchmarks, each printing figures measured in one run."""

from __future__ import annotations

import sys

from bench import import_time, search_emulator


def main() -> int:
    search_emulator.run()
    import_time.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
