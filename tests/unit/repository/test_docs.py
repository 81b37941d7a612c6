"""The docs cannot drift from the code: every module, router, port and function the docs list exists and
every one that exists is listed; every module, test file and test the docs name is there; no doc cites
an issue number or a path outside the repository.

The lists live in docs/architecture.md, "Module map" (the core, the client and the local stack); README.md's
Layout names the functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CORE = ROOT / "layers" / "core" / "python" / "memmy_kb"
CLIENT = ROOT / "client" / "memmy_kb_client"
LOCAL = ROOT / "infra" / "local" / "memmy_local"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
DOCS = sorted([ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "client" / "README.md", *(ROOT / "docs").glob("*.md")])
# Where a dotted name in backticks may point: the package's top-level name and the folder it lives in.
PACKAGES = {
    "memmy_kb": ROOT / "layers" / "core" / "python" / "memmy_kb",
    "memmy_kb_client": ROOT / "client" / "memmy_kb_client",
    "memmy_local": ROOT / "infra" / "local" / "memmy_local",
    "bench": ROOT / "bench",
    "tests": ROOT / "tests",
}


def _section(text: str, heading: str) -> str:
    """The text under ``heading`` (a markdown heading line) up to the next heading of any level."""
    lines = text.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    return "\n".join(lines[start:end])


def _listed(heading: str) -> set[str]:
    """The names a Module map list gives: the first backticked word of each bullet."""
    return set(re.findall(r"^- `([^`]+)`", _section(ARCHITECTURE.read_text(), heading), re.M))


def _module_names(folder: Path, *, packages: bool = True, recursive: bool = False) -> set[str]:
    """``table``, or ``dynamodb/table`` when ``recursive``; subpackages as ``models/`` when ``packages``."""
    found = folder.rglob("*.py") if recursive else folder.glob("*.py")
    names = {path.relative_to(folder).with_suffix("").as_posix() for path in found if path.stem != "__init__"}
    if packages and not recursive:
        names |= {path.parent.name + "/" for path in folder.glob("*/__init__.py")}
    return names


def _protocols() -> set[str]:
    """The protocols of every module of the ports package."""
    return {
        node.name
        for module in (CORE / "domain" / "ports").glob("*.py")
        for node in ast.parse(module.read_text()).body
        if isinstance(node, ast.ClassDef)
        and any(isinstance(base, ast.Name) and base.id == "Protocol" for base in node.bases)
    }


@pytest.mark.parametrize(
    ("heading", "actual"),
    [
        ("### Base: `memmy_kb`", lambda: _module_names(CORE, packages=False)),
        ("### Domain: `memmy_kb.domain`", lambda: _module_names(CORE / "domain")),
        ("### Adapters: `memmy_kb.adapters`", lambda: _module_names(CORE / "adapters", recursive=True)),
        ("### API: `memmy_kb.api`", lambda: _module_names(CORE / "api")),
        ("### Routers: `memmy_kb.api.routes`", lambda: _module_names(CORE / "api" / "routes")),
        ("### Ports: `memmy_kb.domain.ports`", _protocols),
        ("### Functions: `functions/`", lambda: {p.parent.name for p in (ROOT / "functions").glob("*/app.py")}),
        ("### Client: `memmy_kb_client`", lambda: _module_names(CLIENT)),
        ("### Local service: `memmy_kb_client.desktop`", lambda: _module_names(CLIENT / "desktop")),
        ("### Sync: `memmy_kb_client.sync`", lambda: _module_names(CLIENT / "sync")),
        ("### Home: `memmy_kb_client.home`", lambda: _module_names(CLIENT / "home")),
        ("### Agents: `memmy_kb_client.agents`", lambda: _module_names(CLIENT / "agents")),
        ("### CLI: `memmy_kb_client.cli`", lambda: _module_names(CLIENT / "cli")),
        ("### Local stack: `memmy_local`", lambda: _module_names(LOCAL)),
        ("### moto and its patches: `memmy_local.aws`", lambda: _module_names(LOCAL / "aws")),
        ("### The gateway: `memmy_local.gateway`", lambda: _module_names(LOCAL / "gateway")),
        ("### Dev identity provider: `memmy_local.identity`", lambda: _module_names(LOCAL / "identity")),
        ("### Functions in-process: `memmy_local.lambdas`", lambda: _module_names(LOCAL / "lambdas")),
        ("### The MemOS emulator: `memmy_local.memos_emulator`", lambda: _module_names(LOCAL / "memos_emulator")),
        ("### Provisioning: `memmy_local.provision`", lambda: _module_names(LOCAL / "provision")),
    ],
)
def test_the_module_map_lists_exactly_what_exists(heading, actual):
    assert _listed(heading) == actual()


DOMAIN_PACKAGES = sorted(path.parent.name for path in (CORE / "domain").glob("*/__init__.py"))


@pytest.mark.parametrize("package", [name for name in DOMAIN_PACKAGES if name != "ports"])
def test_the_module_map_gives_each_domain_package_a_paragraph_and_its_modules(package):
    # The ports' section lists their protocols (above); each feature package has its own heading.
    headings = [
        line
        for line in ARCHITECTURE.read_text().splitlines()
        if line.startswith("#### ") and line.endswith(f"`memmy_kb.domain.{package}`")
    ]
    assert len(headings) == 1, f"no heading (or several) for memmy_kb.domain.{package}"
    section = _section(ARCHITECTURE.read_text(), headings[0])
    assert [line for line in section.splitlines() if line and not line.startswith(("- ", "  "))], "no paragraph"
    assert _listed(headings[0]) == _module_names(CORE / "domain" / package)


def test_the_routes_table_and_the_readme_layout_name_every_function():
    functions = {p.parent.name for p in (ROOT / "functions").glob("*/app.py")}
    table = set(re.findall(r"^\| `(\w+)` \|", _section(ARCHITECTURE.read_text(), "## Routes"), re.M))
    assert table == functions
    layout = _section((ROOT / "README.md").read_text(), "## Layout")
    assert {name for name in functions if re.search(rf"\b{name}\b", layout)} == functions


def _resolves(dotted: str) -> bool:
    """``memmy_kb.domain.access`` (a module) or ``memmy_kb.domain.access.compute_recall_scope`` (a name in it)."""
    top, *rest = dotted.split(".")
    folder = PACKAGES[top]
    for split in range(len(rest), -1, -1):
        path = folder.joinpath(*rest[:split])
        module = path.with_suffix(".py") if rest[:split] else path / "__init__.py"
        if not module.is_file() and (path / "__init__.py").is_file():
            module = path / "__init__.py"
        if not module.is_file():
            continue
        names = rest[split:]
        if not names:
            return True
        return names[0] in _defined(module)
    return False


def _defined(module: Path) -> set[str]:
    tree = ast.parse(module.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return names


def _backticked(pattern: str) -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for code in re.findall(r"`([^`\n]+)`", doc.read_text()):
            for match in re.finditer(pattern, code):
                found.append((doc.relative_to(ROOT).as_posix(), match.group(0)))
    return found


def test_every_module_the_docs_name_exists():
    names = _backticked(r"\b(?:memmy_kb_client|memmy_kb|memmy_local)(?:\.\w+)+")
    assert names, "the docs name no module: the pattern is wrong"
    assert [(doc, name) for doc, name in names if not _resolves(name)] == []


# Where a path in backticks may be relative to: the repository, the core package, the local stack's and the
# client's packages (docs write `domain/access.py`, `recall/turn.py`, `memmy_local/cli.py`, `desktop/server.py`).
PATH_BASES = (
    ROOT,
    CORE,
    CORE.parent,
    ROOT / "infra" / "local",
    ROOT / "infra" / "local" / "memmy_local",
    ROOT / "client",
    ROOT / "client" / "memmy_kb_client",
    CORE / "api",
    CORE / "adapters",
    CORE / "domain",
)


def test_every_source_file_the_docs_name_exists():
    # Files of the repository (a user's settings such as `.claude/settings.json`, or a URL path, are not).
    paths = [(doc, path) for doc, path in _backticked(r"^\w[\w./-]*/[\w.-]+\.(?:py|yaml|js|css|html)$")]
    assert len(paths) > 20, "the docs name almost no file: the pattern is wrong"
    missing = [(doc, path) for doc, path in paths if not any((base / path).is_file() for base in PATH_BASES)]
    assert missing == []


def test_every_python_file_the_docs_name_by_itself_exists_somewhere():
    # A bare `injected.py` or `stack.py` names no folder: some module of the repository must bear it.
    names = _backticked(r"^\w+\.py$")
    assert len(names) > 10, "the docs name almost no bare module: the pattern is wrong"
    folders = ("layers", "functions", "client", "infra", "bench", "tests")
    existing = {path.name for folder in folders for path in (ROOT / folder).rglob("*.py")}
    assert [(doc, name) for doc, name in names if name not in existing] == []


def test_every_test_file_and_test_the_docs_name_exists():
    paths = _backticked(r"\btests/[\w/]+\.py\b")
    assert paths
    assert [(doc, path) for doc, path in paths if not (ROOT / path).is_file()] == []
    defined = {
        match
        for path in (ROOT / "tests").rglob("test_*.py")
        for match in re.findall(r"^\s*(?:async )?def (test_\w+)", path.read_text(), re.M)
    }
    tests = _backticked(r"^test_\w+$")
    assert [(doc, name) for doc, name in tests if name not in defined] == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_doc_cites_an_issue_number_or_a_path_outside_the_repository(doc):
    text = doc.read_text()
    assert re.findall(r"(?i)\bissues? #?\d+|#\d+\b(?!\))|\.\./shared|\bshared/", text) == []


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    in_code = False
    found = set()
    for line in doc.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and re.match(r"#{1,6} ", line):
            found.add(_anchor(line))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_between_the_docs_reaches_a_file_and_heading(doc):
    broken = []
    for target in _LINK.findall(doc.read_text()):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _anchors(linked)):
            broken.append(target)
    assert broken == []


def test_the_readme_starts_with_the_quick_start_and_its_contents():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines.index("## Quick start") < 15
    assert "make run ARGS=--demo" in "\n".join(lines[: lines.index("## Contents")])
    contents = _section("\n".join(lines), "## Contents")
    headings = _anchors(ROOT / "README.md")
    assert set(re.findall(r"\]\(#([^)]+)\)", contents)) <= headings
