"""The repository's import graph, from the source (no code is imported): the core's layers, and import loops.

Layers, lowest first: ``base`` (errors, records, settings, observability, invocation_deadline),
``domain``, ``adapters``, ``composition`` (the composition root, wiring adapters to ports), ``api``, and the
``functions`` handlers on top. A module may import its own layer and the layers below, never a layer
above. The adapters implement the domain's ports, so of the domain they may import only its vocabulary
(``DOMAIN_VOCABULARY``: the ports and the value and error types they speak), never its rules.
The domain's rules must read and type-check with no AWS or HTTP library in sight: of what is not
``memmy_kb``, a domain module may import only ``DOMAIN_THIRD_PARTY`` (the standard library, pydantic,
phonenumbers, markdownify, pypdf, and Powertools' ``Logger`` for observability); ``foreign_imports`` finds
the others (boto3, botocore, httpx...), in any form: ``import``, ``from ... import``, under
``TYPE_CHECKING``, in a function, or ``importlib.import_module`` / ``__import__`` of a literal name.
Across the whole repository (the core, the handlers, the client, the local stack, bench/ and tests/),
``import_loops`` finds every import loop, in the same forms, and names one cycle of each.
The domain is grouped by feature (``domain_part``): a package per feature, the ports' package, and directly
in domain/ only ``DOMAIN_SHARED``; ``feature_edges`` gives the imports between its features.
``imports_of_test_code`` finds a module of tests/ importing one of tests/ outside tests/support (a test
module, or a helper kept beside one). ``python -m tests.support.import_graph`` prints the edges between
layers, the forbidden ones and the loops, if any; tests/unit/repository/test_layers.py fails when one
appears.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "python"
FUNCTIONS = ROOT / "functions"
LAYERS = ("base", "domain", "adapters", "composition", "api", "functions")
BASE_MODULES = frozenset(
    {"errors", "records", "settings", "observability", "invocation_deadline", "cold_start"}
)
# What the adapters may import of the domain: the ports they implement (the package ``PORTS`` and its
# modules) and the types those speak.
PORTS = "memmy_kb.domain.ports"
DOMAIN_VOCABULARY = frozenset(
    {
        PORTS,
        "memmy_kb.domain.storage",
        "memmy_kb.domain.engine",
        # The fingerprints' port, and the value it stores (its stored form is the value's own).
        "memmy_kb.domain.fingerprints.store",
        "memmy_kb.domain.fingerprints.prints",
    }
)
# What the domain may import besides memmy_kb and the standard library: top-level packages (pure
# computation, no I/O: HTML to Markdown is markdownify on bs4), and of Powertools only the logger
# (``from aws_lambda_powertools import Logger``). pypdf reads a PDF's text from a file object the domain
# hands it (``memmy_kb.domain.fingerprints.text_extraction``).
DOMAIN_THIRD_PARTY = frozenset({"pydantic", "phonenumbers", "markdownify", "bs4", "pypdf"})
DOMAIN_POWERTOOLS = frozenset({"aws_lambda_powertools.Logger", "aws_lambda_powertools.logging"})


@dataclass(frozen=True)
class Edge:
    source: str  # the importing module (or handler file)
    target: str  # the imported memmy_kb module
    line: int

    @property
    def upward(self) -> bool:
        return rank(self.source) < rank(self.target)

    @property
    def into_domain_rules(self) -> bool:
        """An adapter importing more of the domain than its vocabulary (a rule, or the package itself)."""
        return (
            layer_of(self.source) == "adapters"
            and layer_of(self.target) == "domain"
            and not is_vocabulary(self.target)
        )

    @property
    def forbidden(self) -> bool:
        return self.upward or self.into_domain_rules


# The domain is grouped by feature: a package per feature (``memmy_kb.domain.recall``...), the ports in
# ``memmy_kb.domain.ports``, and directly in domain/ only the modules every feature shares.
DOMAIN = CORE / "memmy_kb" / "domain"
DOMAIN_SHARED = frozenset({"access", "directory", "display", "engine", "storage", "team_reach"})


def domain_part(module: str) -> str:
    """What part of the domain a module of it is in: its feature package (``recall``), ``ports``, or
    ``shared`` for a module directly in domain/ (and the package itself)."""
    parts = module.split(".")
    if parts[:2] != ["memmy_kb", "domain"]:
        raise ValueError(f"{module} is not in the domain")
    return parts[2] if len(parts) > 3 else "shared"


def feature_edges() -> dict[str, dict[str, int]]:
    """Between the domain's features: for each, the others its modules import, with the line of the first
    such import found; the shared modules and the ports (types every feature speaks) count as ``shared``."""
    graph: dict[str, dict[str, int]] = {}

    def feature(module: str) -> str:
        part = domain_part(module)
        return "shared" if part == "ports" else part

    for edge in edges():
        if layer_of(edge.source) == "domain" and layer_of(edge.target) == "domain":
            source, target = feature(edge.source), feature(edge.target)
            graph.setdefault(source, {})
            graph.setdefault(target, {})
            if source != target:
                graph[source].setdefault(target, edge.line)
    return graph


def is_vocabulary(module: str) -> bool:
    """Whether an adapter may import ``module`` of the domain: a port (any module of ``PORTS``) or a type."""
    return module in DOMAIN_VOCABULARY or module.startswith(PORTS + ".")


def layer_of(module: str) -> str:
    """The layer a dotted module name (``memmy_kb.domain.access``, ``functions.recall.app``) belongs to."""
    parts = module.split(".")
    if parts[0] == "functions":
        return "functions"
    if parts[0] != "memmy_kb":
        raise ValueError(f"{module} is outside the layered code")
    if len(parts) == 1 or parts[1] in BASE_MODULES:
        return "base"
    if parts[1] in ("adapters", "domain", "composition", "api"):
        return parts[1]
    raise ValueError(f"{module} belongs to no layer: put it in a subpackage or name it a base module")


def rank(module: str) -> int:
    return LAYERS.index(layer_of(module))


def imports_of(source: str, module: str) -> Iterator[Edge]:
    """Every ``memmy_kb`` import in ``source`` (module level, in functions, under TYPE_CHECKING alike)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # ``from memmy_kb.domain import sharing`` imports the submodule: count the deeper name.
            names = [
                f"{node.module}.{alias.name}" if _is_package(node.module) else node.module
                for alias in node.names
            ]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "memmy_kb":
                yield Edge(module, name, node.lineno)


@dataclass(frozen=True)
class ForeignImport:
    source: str  # the importing module
    target: str  # what it imports, dotted (``botocore.exceptions.ClientError``)
    line: int


def _imported_names(node: ast.AST) -> list[str]:
    """The dotted names an import node (or a literal ``import_module``/``__import__`` call) imports."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:  # relative: inside memmy_kb
            return []
        return [f"{node.module}.{alias.name}" for alias in node.names]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def _allowed_in_domain(name: str) -> bool:
    top = name.split(".")[0]
    if top in ("memmy_kb", "__future__") or top in sys.stdlib_module_names or top in DOMAIN_THIRD_PARTY:
        return True
    return any(name == allowed or name.startswith(allowed + ".") for allowed in DOMAIN_POWERTOOLS)


def foreign_imports(source: str, module: str) -> Iterator[ForeignImport]:
    """Every import in ``source`` (any form, anywhere in it) a domain module may not make."""
    for node in ast.walk(ast.parse(source)):
        for name in _imported_names(node):
            if not _allowed_in_domain(name):
                yield ForeignImport(module, name, getattr(node, "lineno", 0))


def domain_foreign_imports() -> list[ForeignImport]:
    return [
        found
        for module, path in modules()
        if layer_of(module) == "domain"
        for found in foreign_imports(path.read_text(), module)
    ]


def _is_package(module: str) -> bool:
    return (CORE / module.replace(".", "/") / "__init__.py").is_file()


def modules() -> Iterator[tuple[str, Path]]:
    for path in sorted((CORE / "memmy_kb").rglob("*.py")):
        parts = path.relative_to(CORE).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path
    for path in sorted(FUNCTIONS.glob("*/app.py")):
        yield f"functions.{path.parent.name}.app", path


def edges() -> list[Edge]:
    return [edge for module, path in modules() for edge in imports_of(path.read_text(), module)]


# -- import loops, across the repository ----------------------------------------------------------------
# Every first-party package by the folder that holds it; tests/ and bench/ are packages of the root.
PACKAGE_ROOTS = {
    "memmy_kb": CORE,
    "memmy_kb_client": ROOT / "client",
    "memmy_local": ROOT / "infra" / "local",
    "bench": ROOT,
    "tests": ROOT,
}
_SKIPPED = frozenset({"__pycache__", "node_modules", ".venv", "build", "dist"})


@dataclass(frozen=True)
class Source:
    """One module's text, as the loop finder reads it."""

    text: str
    is_package: bool = False
    path: str = ""


def repository_sources() -> dict[str, Source]:
    """Every Python module of the core, the handlers, the client, the local stack, bench/ and tests/."""
    found: dict[str, Source] = {}
    for top, base in PACKAGE_ROOTS.items():
        for path in sorted((base / top).rglob("*.py")):
            if _SKIPPED.intersection(path.relative_to(base).parts):
                continue
            parts = path.relative_to(base).with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = Source(path.read_text(encoding="utf-8"), is_package, str(path.relative_to(ROOT)))
    for path in sorted(FUNCTIONS.glob("*/app.py")):
        name = f"functions.{path.parent.name}.app"
        found[name] = Source(path.read_text(encoding="utf-8"), False, str(path.relative_to(ROOT)))
    return found


def _resolve(module: str, source: Source, node: ast.ImportFrom) -> str:
    """The absolute name ``from <node.module>`` means inside ``module`` (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if source.is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _known(name: str, known: Collection[str]) -> str | None:
    """``name`` if it is a module of the repository, else its nearest ancestor that is, else None."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def module_edges(module: str, source: Source, known: Collection[str]) -> Iterator[Edge]:
    """The repository's modules that ``module`` imports: in any form, anywhere in it (module level, in a
    function, under TYPE_CHECKING, ``importlib.import_module`` of a literal name)."""
    for node in ast.walk(ast.parse(source.text)):
        if isinstance(node, ast.ImportFrom):
            base = _resolve(module, source, node)
            # ``from package import submodule`` imports the submodule; ``from module import name`` the module.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            names = _imported_names(node)
        for name in names:
            target = _known(name, known)
            if target is not None and target != module:  # a package naming its own attributes is no loop
                yield Edge(module, target, getattr(node, "lineno", 0))


def import_loops(sources: Mapping[str, Source] | None = None) -> list[str]:
    """Each import loop among ``sources`` (default: the whole repository), named by one of its cycles:
    ``a:12 -> b:3 -> a`` (each module with the line of its import of the next)."""
    sources = repository_sources() if sources is None else sources
    graph: dict[str, dict[str, int]] = {name: {} for name in sources}
    for name, source in sources.items():
        for edge in module_edges(name, source, sources):
            graph[name][edge.target] = min(edge.line, graph[name].get(edge.target, edge.line))
    return [_name_cycle(graph, component) for component in _loops(graph)]


SHARED_TEST_CODE = "tests.support"


def imports_of_test_code(sources: Mapping[str, Source] | None = None) -> list[str]:
    """Each import by a module of tests/ of a module of tests/ outside tests/support (a test module, or a
    helper kept beside one): ``source:line imports target``. What tests share lives in tests/support."""
    sources = repository_sources() if sources is None else sources
    return [
        f"{edge.source}:{edge.line} imports {edge.target}"
        for name, source in sources.items()
        if name.split(".")[0] == "tests"
        for edge in module_edges(name, source, sources)
        if edge.target.split(".")[0] == "tests"
        and edge.target != SHARED_TEST_CODE
        and not edge.target.startswith(SHARED_TEST_CODE + ".")
    ]


def _loops(graph: Mapping[str, Mapping[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative), each sorted, in
    order of their first module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _name_cycle(graph: Mapping[str, Mapping[str, int]], component: list[str]) -> str:
    """One shortest cycle through the component's first module, as ``a:12 -> b:3 -> a``, and the
    component's other modules when the cycle does not pass them all."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    frontier = [start]
    while frontier and start not in previous:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target in members and target not in previous:
                    previous[target] = node
                    following.append(target)
        frontier = following
    path = [start]
    while path[-1] != start or len(path) == 1:
        path.append(previous[path[-1]])
    path.reverse()
    cycle = " -> ".join(f"{a}:{graph[a][b]}" for a, b in pairwise(path)) + f" -> {start}"
    others = sorted(members.difference(path))
    return f"{cycle} (in one loop with {', '.join(others)})" if others else cycle


def main() -> int:
    found = edges()
    between = Counter((layer_of(e.source), layer_of(e.target)) for e in found)
    print("imports between layers (importer -> imported: count)")
    for (source, target), count in sorted(between.items(), key=lambda kv: (LAYERS.index(kv[0][0]), kv[0][1])):
        print(f"  {source:>9} -> {target:<9} {count:>4}")
    forbidden = [e for e in found if e.forbidden]
    print(f"forbidden imports (upward, or an adapter into the domain's rules): {len(forbidden)}")
    for edge in forbidden:
        print(f"  {edge.source}:{edge.line} imports {edge.target}")
    foreign = domain_foreign_imports()
    print(f"libraries the domain may not import (AWS SDK, HTTP clients...): {len(foreign)}")
    for item in foreign:
        print(f"  {item.source}:{item.line} imports {item.target}")
    loops = import_loops()
    print(f"import loops in the repository: {len(loops)}")
    for loop in loops:
        print(f"  {loop}")
    return 1 if forbidden or foreign or loops else 0


if __name__ == "__main__":
    sys.exit(main())
