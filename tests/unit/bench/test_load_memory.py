"""``make soak``'s memory criterion (bench/load_memory.py) on synthetic RSS series: a process whose memory
keeps growing fails, one that climbs while warming up and then holds, jitters, or steps once passes."""

from __future__ import annotations

import math
import random

from bench import load_soak
from bench.load_memory import ITEM_KIB, MIN_SAMPLES, ProcessMemory, Sample, growth, sample_interval
from bench.load_model import LoadSettings, RequestRecord
from bench.load_oracle import check_scope
from bench.load_report import LoadReport

DURATION = 600.0  # a ten-minute soak sampled every 5 s
WARMUP = 120.0
BASE = 300.0


def series(rss_at, *, seed: int = 1, noise: float = 2.0) -> list[Sample]:
    """RSS samples every 5 s over the soak: ``rss_at(t)`` plus uniform noise of +-``noise`` MiB."""
    rng = random.Random(seed)
    return [Sample(t, rss_at(t) + rng.uniform(-noise, noise)) for t in range(0, int(DURATION) + 1, 5)]


def verdict(samples: list[Sample]) -> bool:
    return growth(samples, warmup_seconds=WARMUP).growing


def test_a_steady_leak_fails():
    # 10 MiB a minute: 80 MiB over the eight minutes after the warm-up.
    assert verdict(series(lambda t: BASE + t / 6))


def test_a_slower_leak_over_the_limit_fails_even_with_gc_sawtooth():
    # 6 MiB a minute under a 20 MiB sawtooth (a collector freeing and the heap refilling every 40 s).
    assert verdict(series(lambda t: BASE + t / 10 + 20 * ((t % 40) / 40), noise=3))


def test_a_flat_noisy_series_passes():
    assert not verdict(series(lambda t: BASE, noise=8))


def test_a_climb_during_the_warm_up_then_a_plateau_passes():
    assert not verdict(series(lambda t: BASE + 120 * (1 - math.exp(-t / 30))))


def test_one_step_or_spike_after_the_warm_up_passes_unless_the_memory_stays_risen_from_mid_run():
    # A cache filled once, late, and a spike of 250 MiB at the very end: each tips the fitted line over
    # the limit, but most of the last third comes before them.
    for rss_at in (lambda t: BASE + (60 if t > 540 else 0), lambda t: BASE + (250 if t > 585 else 0)):
        result = growth(series(rss_at), warmup_seconds=WARMUP)
        assert result.rise_mib > result.limit_mib
        assert not result.growing
    # A transient spike of 150 MiB mid-run.
    assert not verdict(series(lambda t: BASE + (150 if 300 <= t < 310 else 0)))
    # A step of 60 MiB in the middle of the measured span: the memory stayed risen, which the soak reports.
    assert verdict(series(lambda t: BASE + (60 if t > 360 else 0)))


def test_growth_below_the_limit_passes():
    # A steady rise of 30 MiB after the warm-up: the thirds' medians are 20 MiB apart, the line under 32.
    result = growth(series(lambda t: BASE + t / 16), warmup_seconds=WARMUP)
    assert result.thirds_gap_mib > result.limit_mib / 2
    assert not result.growing
    # The load driver keeps each request's record for the oracle: a few MiB over the run.
    assert not verdict(series(lambda t: BASE + t / 60, noise=0.5))
    result = growth(series(lambda t: BASE + t / 60, noise=0.5), warmup_seconds=WARMUP)
    assert 0 < result.thirds_gap_mib < result.rise_mib < result.limit_mib


def test_the_rise_is_the_fitted_line_across_the_span_after_the_warm_up():
    result = growth(series(lambda t: BASE + t / 6, noise=0), warmup_seconds=WARMUP)
    assert math.isclose(result.rise_mib, 80.0, rel_tol=1e-9)
    assert result.span_seconds == DURATION - WARMUP
    assert "GROWING: fitted rise +80.0 MiB over 480 s" in result.describe()


def test_too_few_samples_after_the_warm_up_give_no_verdict():
    short = [Sample(t, BASE + t) for t in range(0, 130, 5)]  # two samples after a 120 s warm-up
    result = growth(short, warmup_seconds=WARMUP)
    assert not result.measured
    assert not result.growing
    assert f"{MIN_SAMPLES} needed" in result.describe()


def test_about_120_samples_over_a_load_within_bounds():
    assert (sample_interval(600), sample_interval(60), sample_interval(6000)) == (5.0, 1.0, 5.0)


def soak_report(stack: list[Sample], driver: list[Sample], *, errors: bool = False) -> LoadReport:
    report = LoadReport(LoadSettings(seed=1), DURATION, [], check_scope([], [], {}), [], 0, 1, {})
    report.memory = [ProcessMemory("local stack", 10, stack), ProcessMemory("load driver", 11, driver)]
    report.marks = (0.0, DURATION, DURATION + 30)
    if errors:
        report.driver_errors.append("load-0: Traceback ...")
    return report


def test_the_soak_fails_when_one_process_keeps_growing(monkeypatch, capsys):
    steady, leaking = series(lambda t: BASE), series(lambda t: BASE + t / 6)
    for memory, code in (((steady, steady), 0), ((steady, leaking), 1), ((leaking, steady), 1)):
        monkeypatch.setattr(load_soak.load, "run", lambda settings, m=memory: soak_report(*m))
        assert load_soak.main(["--duration", str(DURATION)]) == code
    text = capsys.readouterr().out
    assert "load driver  GROWING: fitted rise +8" in text
    assert "soak verdict: FAIL" in text
    assert "memory over the load (RSS MiB at every tenth of its 600 s):" in text


def test_the_soak_fails_on_a_load_failure_or_without_samples(monkeypatch):
    steady = series(lambda t: BASE)
    monkeypatch.setattr(load_soak.load, "run", lambda settings: soak_report(steady, steady, errors=True))
    assert load_soak.main([]) == 1
    monkeypatch.setattr(load_soak.load, "run", lambda settings: soak_report(steady, []))
    assert load_soak.main([]) == 1


def test_the_load_report_gives_each_processs_memory_and_p95_latency():
    stack = [
        Sample(0, 300, 10),
        Sample(5, 340, 12),
        Sample(600, 350, 1500),
        Sample(605, 420),
        Sample(630, 360, 1510),
    ]
    report = soak_report(stack, [Sample(0, 90), Sample(630, 120)])
    report.requests = [RequestRecord("POST /recall", 200, 0.0, n / 1000, True) for n in range(1, 101)]
    text = report.render()
    assert "| route" in text
    assert "p50 ms |  p95 ms |  p99 ms" in text
    assert "| POST /recall" in text
    assert "|      50 |      95 |      99 |" in text
    # Before the load (t=0), at its end (t=600), after the checks (t=630), and the highest sample.
    assert "local stack (pid 10)         300          350           360      420" in text
    assert "load driver (pid 11)          90           90           120      120" in text
    assert "local stack's DynamoDB items: 10 before, 1,500 at the end, 1,510 after the checks" in text


def with_items(samples: list[Sample], items_at) -> list[Sample]:
    return [Sample(s.seconds, s.mib, items_at(s.seconds)) for s in samples]


def test_the_stack_is_judged_on_its_memory_less_the_items_it_holds():
    # 1,500 items a minute, each costing ITEM_KIB: 47 MiB more after the warm-up, all of it data.
    items_at = lambda t: 2000 + int(25 * t)  # noqa: E731
    data = with_items(series(lambda t: BASE + items_at(t) * ITEM_KIB / 1024), items_at)
    assert growth([Sample(s.seconds, s.mib) for s in data], warmup_seconds=WARMUP).growing  # by RSS alone
    result = growth(data, warmup_seconds=WARMUP)
    assert result.net_of_items
    assert not result.growing
    assert "steady: less its DynamoDB items" in result.describe()
    # The same data and a leak of 8 MiB a minute on top of it.
    leaking = with_items(series(lambda t: BASE + items_at(t) * ITEM_KIB / 1024 + t * 8 / 60), items_at)
    assert growth(leaking, warmup_seconds=WARMUP).growing


def test_samples_whose_item_count_failed_are_left_out():
    items_at = lambda t: 2000 + int(25 * t)  # noqa: E731
    data = with_items(series(lambda t: BASE + items_at(t) * ITEM_KIB / 1024), items_at)
    data[-5:] = [Sample(s.seconds, s.mib + 500) for s in data[-5:]]  # uncounted, and far off
    result = growth(data, warmup_seconds=WARMUP)
    assert (result.samples, result.growing) == (len(data) - 24 - 5, False)
