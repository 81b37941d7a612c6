"""No Python module of the repository grows past 400 lines, tests aside: a longer one has seams to split along.
No function of the core, the handlers, the client, the local stack or the benchmarks grows past 80 lines either, and no
module of tests/ (a test module, a fixture, a fake) past 600 (that no test module imports another:
test_layers.py).

Covered by the module cap: the core layer, the handlers in functions/, the desktop client, the local stack
and the benchmarks; the client's JavaScript (the knowledge-base page's modules) has the same cap.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MAX_MODULE_LINES = 400
COVERED = ("layers", "functions", "client", "infra", "bench")
MAX_FUNCTION_LINES = 80
# Tests read as scenarios and tables of cases, so they may run longer, but not without end.
MAX_TEST_MODULE_LINES = 600
# Where the function cap holds: the core, the handlers, the client, the local stack and the benchmarks.
FUNCTIONS_CAPPED = ("layers", "functions", "client", "infra", "bench")
# Functions over the cap today, each with the length it may not exceed, until the restructuring of its part
# splits it: an entry fails once its function is back under the cap, so that it is removed. Empty this
# list; never add to it.
LONG_FUNCTIONS_ALLOWED: dict[str, int] = {}
# Not code of the repository: virtualenvs, caches, build output.
SKIPPED_PARTS = frozenset({".venv", "venv", "node_modules", "__pycache__", "build", "dist", ".aws-sam"})


def _modules(top: Path, root: Path = ROOT, pattern: str = "*.py") -> list[Path]:
    return [
        path
        for path in sorted(top.rglob(pattern))
        if not SKIPPED_PARTS.intersection(path.relative_to(root).parts)
        and not any(part.startswith(".") for part in path.relative_to(root).parts)
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


def _longer_than(top: Path, lines: int, root: Path = ROOT, pattern: str = "*.py") -> dict[str, int]:
    return {
        path.relative_to(root).as_posix(): count
        for path in _modules(top, root, pattern)
        if (count := _line_count(path)) > lines
    }


def test_no_script_of_the_client_is_over_400_lines():
    assert _modules(ROOT / "client", pattern="*.js"), "no JavaScript found under client/"
    assert _longer_than(ROOT / "client", MAX_MODULE_LINES, pattern="*.js") == {}


def test_the_cap_of_the_scripts_sees_a_long_one(tmp_path):
    static = tmp_path / "client" / "static"
    static.mkdir(parents=True)
    (static / "long.js").write_text("x();\n" * (MAX_MODULE_LINES + 1))
    (static / "at_the_cap.js").write_text("x();\n" * MAX_MODULE_LINES)
    (tmp_path / "client" / "node_modules").mkdir()
    (tmp_path / "client" / "node_modules" / "vendored.js").write_text("x();\n" * 1000)
    found = _longer_than(tmp_path / "client", MAX_MODULE_LINES, tmp_path, "*.js")
    assert found == {"client/static/long.js": MAX_MODULE_LINES + 1}


def test_no_module_of_the_tests_is_over_600_lines():
    assert _longer_than(ROOT / "tests", MAX_TEST_MODULE_LINES) == {}


def test_the_cap_of_the_tests_sees_a_long_one(tmp_path):
    # A test module one line over the cap is found; one at the cap is not.
    tests = tmp_path / "tests"
    (tests / "unit").mkdir(parents=True)
    (tests / "unit" / "test_long.py").write_text("x = 1\n" * (MAX_TEST_MODULE_LINES + 1))
    (tests / "unit" / "test_at_the_cap.py").write_text("x = 1\n" * MAX_TEST_MODULE_LINES)
    assert _longer_than(tests, MAX_TEST_MODULE_LINES, tmp_path) == {"tests/unit/test_long.py": MAX_TEST_MODULE_LINES + 1}


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


def _functions(path: Path, root: Path = ROOT) -> Iterator[tuple[str, int]]:
    """``path::Class.method`` (nested functions as ``outer.inner``) and its lines, ``def`` to the last one."""

    def walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, int]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    yield name, (child.end_lineno or child.lineno) - child.lineno + 1
                yield from walk(child, f"{name}.")
            else:
                yield from walk(child, prefix)

    relative = path.relative_to(root).as_posix()
    for name, lines in walk(ast.parse(path.read_text(encoding="utf-8")), ""):
        yield f"{relative}::{name}", lines


def _function_lengths() -> dict[str, int]:
    return {name: lines for top in FUNCTIONS_CAPPED for path in _modules(ROOT / top) for name, lines in _functions(path)}


def test_no_function_outside_tests_is_over_80_lines():
    long = {
        name: lines
        for name, lines in _function_lengths().items()
        if lines > MAX_FUNCTION_LINES and lines > LONG_FUNCTIONS_ALLOWED.get(name, 0)
    }
    assert long == {}


def test_each_function_allowed_over_80_lines_is_still_there_and_still_over():
    # Split one, and its entry goes: the list only shrinks.
    lengths = _function_lengths()
    stale = [name for name in LONG_FUNCTIONS_ALLOWED if lengths.get(name, 0) <= MAX_FUNCTION_LINES]
    assert stale == []


def test_a_function_is_measured_from_its_def_to_its_last_line(tmp_path):
    module = tmp_path / "infra" / "sample.py"
    module.parent.mkdir()
    module.write_text(
        "@decorator\n"
        "def outer():\n"
        '    """Doc."""\n'
        "    def inner():\n"
        "        return 1\n"
        "\n"
        "    return inner\n"
        "\n"
        "\n"
        "class Handler:\n"
        "    async def handle(self):\n"
        "        pass\n"
    )
    assert dict(_functions(module, tmp_path)) == {
        "infra/sample.py::outer": 6,
        "infra/sample.py::outer.inner": 2,
        "infra/sample.py::Handler.handle": 2,
    }
