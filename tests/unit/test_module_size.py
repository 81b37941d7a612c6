"""No Python module of the repository grows past 400 lines, tests aside: a longer one has seams to split along.

Covered: the core layer, the handlers in functions/, the desktop client, the local stack and the benchmarks.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 400
COVERED = ("layers", "functions", "client", "infra", "bench")
# Not code of the repository: virtualenvs, caches, build output.
SKIPPED_PARTS = frozenset({".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".aws-sam"})


def _modules(top: Path) -> list[Path]:
    return [
        path
        for path in sorted(top.rglob("*.py"))
        if not SKIPPED_PARTS.intersection(path.relative_to(ROOT).parts)
        and not any(part.startswith(".") for part in path.relative_to(ROOT).parts)
    ]


def _line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_outside_tests_is_over_400_lines():
    long = {
        str(path.relative_to(ROOT)): _line_count(path)
        for top in COVERED
        for path in _modules(ROOT / top)
        if _line_count(path) > MAX_MODULE_LINES
    }
    assert long == {}


def test_every_python_module_is_in_a_covered_directory_or_a_test():
    # A new top-level directory of code would otherwise escape the cap unnoticed.
    outside = [
        str(path.relative_to(ROOT))
        for path in _modules(ROOT)
        if path.relative_to(ROOT).parts[0] not in (*COVERED, "tests")
    ]
    assert outside == []


def test_the_cap_sees_every_part_of_the_repository():
    # A glob that found nothing would pass the cap for the wrong reason.
    for top in COVERED:
        assert _modules(ROOT / top), f"no Python module found under {top}/"
    assert any(path.name == "app.py" for path in _modules(ROOT / "functions"))
