"""What ``memmy-local up`` prints while it runs: whole lines only (``LineRouter``), one access line per
request, the stack's own log and the functions' warnings; their metrics and other lines go to files of the
dev home (docs/architecture.md, "Local stack")."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final, TextIO

METRICS_FILE_NAME: Final = "local-metrics.jsonl"
FUNCTIONS_FILE_NAME: Final = "local-functions.jsonl"
# Powertools' JSON log lines start with their level; these stay in the functions' file unless --verbose.
_DETAIL_PREFIXES: Final = ('{"level":"DEBUG"', '{"level":"INFO"')
LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Loggers whose INFO lines are one per call the handlers make, not one per request: --verbose shows them.
PER_CALL_LOGGERS: Final = ("httpx",)


def is_metric_line(line: str) -> bool:
    """An EMF line: Powertools' Metrics writes one JSON object whose first key is ``_aws``."""
    return line.lstrip().startswith('{"_aws"')


def is_function_detail(line: str) -> bool:
    """A handler's JSON log line below WARNING (Powertools' Logger puts the level first)."""
    return line.lstrip().startswith(_DETAIL_PREFIXES)


class LineRouter(io.TextIOBase):
    """A text stream that only ever writes whole lines: to ``console``, EMF lines to ``metrics`` and the
    handlers' JSON lines below WARNING to ``functions`` (either None drops them; ``verbose`` prints them
    on the console too).

    Each thread's text is held until it ends a line, so concurrent ``print`` calls (which write the text
    and its newline separately) never glue; each line is written and flushed under one lock, so a
    block-buffered file shared with stderr no longer cuts lines either.
    """

    def __init__(
        self,
        console: TextIO,
        metrics: TextIO | None,
        functions: TextIO | None = None,
        *,
        verbose: bool = False,
    ) -> None:
        super().__init__()
        self._console = console
        self._metrics = metrics
        self._functions = functions
        self._verbose = verbose
        self._pending = threading.local()
        self._lock = threading.Lock()

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._console.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # an attribute of TextIOBase, read-only here
        return getattr(self._console, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        held: str = getattr(self._pending, "text", "") + text
        *lines, rest = held.split("\n")
        self._pending.text = rest
        for line in lines:
            self._emit(line)
        return len(text)

    def flush(self) -> None:
        """Lines are flushed as they are written; a partial line waits for its end (or ``close``)."""

    def close(self) -> None:
        rest = getattr(self._pending, "text", "")
        if rest:
            self._pending.text = ""
            self._emit(rest)
        super().close()

    def _emit(self, line: str) -> None:
        if is_metric_line(line):
            targets = [self._metrics, self._console if self._verbose else None]
        elif is_function_detail(line):
            targets = [self._functions, self._console if self._verbose else None]
        else:
            targets = [self._console]
        with self._lock:
            for target in targets:
                if target is not None:
                    target.write(line + "\n")
                    target.flush()


class _PerCallFilter(logging.Filter):
    """Drops the per-call INFO lines of PER_CALL_LOGGERS (warnings and errors still show)."""

    def filter(self, record: logging.LogRecord) -> bool:
        per_call = any(record.name == name or record.name.startswith(name + ".") for name in PER_CALL_LOGGERS)
        return not per_call or record.levelno >= logging.WARNING


@contextlib.contextmanager
def stack_console(home: Path, *, verbose: bool = False) -> Iterator[Path]:
    """Route this process's output as the module says while the stack runs; yields the metrics file
    (the functions' file is beside it).

    Installed before the handlers are imported, so Powertools' loggers write to the router too.
    """
    home.mkdir(parents=True, exist_ok=True)
    metrics_path = home / METRICS_FILE_NAME
    console = sys.stdout
    with (
        metrics_path.open("w", encoding="utf-8") as metrics,
        (home / FUNCTIONS_FILE_NAME).open("w", encoding="utf-8") as functions,
    ):
        router = LineRouter(console, metrics, functions, verbose=verbose)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        if not verbose:
            handler.addFilter(_PerCallFilter())
        root = logging.getLogger()
        saved_level = root.level
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        sys.stdout = router
        try:
            yield metrics_path
        finally:
            sys.stdout = console
            router.close()
            root.removeHandler(handler)
            root.setLevel(saved_level)
