"""The memory of ``make load``'s processes: RSS sampled through the run, and ``make soak``'s growth verdict.

``MemorySampler`` reads each process's resident set size (``VmRSS`` in ``/proc/<pid>/status``, Linux) at
a fixed interval on a thread of its own: the local stack's process (moto, the gateway and the functions,
the MemOS emulator, the runners: one process) and the load driver's (this one). The users call the API
directly, so no desktop service runs.

``growth`` decides whether a process's memory keeps growing. A Python process's RSS climbs while its
caches, pools and arenas fill, then holds; what must not happen is a climb that goes on with the work.
One climb is by design: moto holds the stack's DynamoDB table in memory, and the service keeps items
that outlive the requests (an activity entry per share, revoke, upload or deletion, kept 180 days; an
idempotency record per create and upload, until a TTL moto never applies). So the stack's samples also
count its items (DynamoDB's ``ItemCount``), and the stack is judged on its RSS less ``ITEM_KIB`` per
item. Over the samples taken after the warm-up (the first fifth of the load), a process keeps growing
when:

1. the least-squares line through them rises by more than ``limit_mib`` (32 MiB) across that span, and
2. the median of their last third is more than half that above the median of their first third.

The line alone can be tipped by a spike near either end or by a step just before the end (a burst of
requests, a cache filled once); the medians alone by a step anywhere in the middle. Together they say
the memory rose through the run and stayed risen, by more than the limit. A
process with fewer than ``MIN_SAMPLES`` samples after the warm-up has no verdict (the soak then fails:
it measured nothing). ``tests/unit/bench/test_load_memory.py`` runs the criterion on synthetic series.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bench.ingest_memory import status_kib

WARMUP_FRACTION = 0.2
GROWTH_LIMIT_MIB = 32.0
MIN_SAMPLES = 6
STACK, DRIVER = "local stack", "load driver"
# What one of the service's DynamoDB items costs the stack, counted generously: 24,000 activity entries
# written into moto's server with the stack's patches, from eight threads, took 2.6 KiB of RSS each; an
# idempotency record (it stores the reply) or an upload record takes more.
ITEM_KIB = 4.0


@dataclass(frozen=True)
class Sample:
    seconds: float  # since the sampler started
    mib: float
    items: int | None = None  # the DynamoDB items the process holds (the local stack's), when counted

    @property
    def net_mib(self) -> float:
        """The RSS less what the process's DynamoDB items account for: what must not keep growing."""
        return self.mib - (self.items or 0) * ITEM_KIB / 1024


def rss_mib(pid: int) -> float | None:
    """VmRSS of ``pid`` in MiB; None when it cannot be read (the process is gone, not Linux)."""
    kib = status_kib("VmRSS", pid)
    return kib / 1024 if kib is not None else None


@dataclass(frozen=True)
class Growth:
    """The verdict on one process's samples after the warm-up."""

    samples: int
    rise_mib: float  # the least-squares line's rise across the samples' span
    span_seconds: float
    thirds_gap_mib: float  # the last third's median minus the first third's
    limit_mib: float
    net_of_items: bool = False  # judged on the RSS less its items (``Sample.net_mib``)

    @property
    def measured(self) -> bool:
        return self.samples >= MIN_SAMPLES

    @property
    def growing(self) -> bool:
        return self.measured and self.rise_mib > self.limit_mib and self.thirds_gap_mib > self.limit_mib / 2

    def describe(self) -> str:
        if not self.measured:
            return f"not measured ({self.samples} samples after the warm-up, {MIN_SAMPLES} needed)"
        return (
            f"{'GROWING' if self.growing else 'steady'}: "
            + ("less its DynamoDB items, " if self.net_of_items else "")
            + f"fitted rise {self.rise_mib:+.1f} MiB over "
            f"{self.span_seconds:.0f} s after the warm-up (limit {self.limit_mib:g}), last third's median "
            f"{self.thirds_gap_mib:+.1f} MiB from the first third's (limit {self.limit_mib / 2:g})"
        )


def growth(samples: list[Sample], *, warmup_seconds: float, limit_mib: float = GROWTH_LIMIT_MIB) -> Growth:
    """Whether the memory of ``samples`` keeps growing after ``warmup_seconds`` (see the module's doc)."""
    kept = sorted((s for s in samples if s.seconds >= warmup_seconds), key=lambda s: s.seconds)
    # Where items are counted, only the samples whose count answered.
    net = any(s.items is not None for s in kept)
    if net:
        kept = [s for s in kept if s.items is not None]
    if len(kept) < MIN_SAMPLES:
        return Growth(len(kept), 0.0, 0.0, 0.0, limit_mib, net_of_items=net)
    times = [s.seconds for s in kept]
    values = [s.net_mib if net else s.mib for s in kept]
    mean_t = sum(times) / len(times)
    mean_v = sum(values) / len(values)
    spread = sum((t - mean_t) ** 2 for t in times)
    slope = sum((t - mean_t) * (v - mean_v) for t, v in zip(times, values, strict=True)) / spread
    span = times[-1] - times[0]
    third = len(kept) // 3
    gap = statistics.median(values[-third:]) - statistics.median(values[:third])
    return Growth(len(kept), slope * span, span, gap, limit_mib, net_of_items=net)


@dataclass
class ProcessMemory:
    """One process's samples and the run's marks on them."""

    name: str
    pid: int
    samples: list[Sample] = field(default_factory=list)

    def at(self, seconds: float) -> float | None:
        """The last sample taken at or before ``seconds`` (the first one if none was)."""
        earlier = [s for s in self.samples if s.seconds <= seconds]
        chosen = earlier[-1] if earlier else (self.samples[0] if self.samples else None)
        return chosen.mib if chosen else None

    @property
    def peak(self) -> float | None:
        return max((s.mib for s in self.samples), default=None)

    def between(self, start: float, end: float) -> list[Sample]:
        """The samples from ``start`` to ``end``, their times made relative to ``start``."""
        return [Sample(s.seconds - start, s.mib, s.items) for s in self.samples if start <= s.seconds <= end]

    def items_at(self, seconds: float) -> int | None:
        """The item count of the last sample at or before ``seconds`` (the first one if none was)."""
        earlier = [s for s in self.samples if s.seconds <= seconds]
        chosen = earlier[-1] if earlier else (self.samples[0] if self.samples else None)
        return chosen.items if chosen else None


class MemorySampler:
    """Samples the RSS of named processes every ``interval`` seconds until ``stop()``, and, for those in
    ``items``, how many DynamoDB items they hold (a count that fails is recorded as unknown)."""

    def __init__(
        self, processes: dict[str, int], interval: float, items: dict[str, Callable[[], int]] | None = None
    ) -> None:
        self.processes = [ProcessMemory(name, pid) for name, pid in processes.items()]
        self.interval = interval
        self._items = items or {}
        self._t0 = time.monotonic()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="load-memory", daemon=True)

    def now(self) -> float:
        return time.monotonic() - self._t0

    def sample(self) -> float:
        """One sample of every process, now; its time."""
        seconds = self.now()
        with self._lock:
            for process in self.processes:
                mib = rss_mib(process.pid)
                if mib is not None:
                    process.samples.append(Sample(seconds, mib, self._count(process.name)))
        return seconds

    def _count(self, name: str) -> int | None:
        count = self._items.get(name)
        if count is None:
            return None
        try:
            return count()
        except Exception:  # the stack busy or gone: this sample has no count
            return None

    def start(self) -> MemorySampler:
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> float:
        """Stop sampling after one last sample; its time."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.sample()

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            self.sample()


def sample_interval(duration: float) -> float:
    """About 120 samples over a load of ``duration`` seconds, between one every second and every 5 s."""
    return min(5.0, max(1.0, duration / 120))
