"""The import graph of the core layer and the handlers, by layer, from the source (no code is imported).

Layers, lowest first: ``base`` (errors, records, settings, observability, invocation_deadline),
``domain``, ``adapters``, ``composition`` (the composition root, wiring adapters to ports), ``api``, and the
``functions`` handlers on top. A module may import its own layer and the layers below, never a layer
above. The adapters implement the domain's ports, so of the domain they may import only its vocabulary
(``DOMAIN_VOCABULARY``: the ports and the value and error types they speak), never its rules.
The domain's rules must read and type-check with no AWS or HTTP library in sight: of what is not
``memmy_kb``, a domain module may import only ``DOMAIN_THIRD_PARTY`` (the standard library, pydantic,
phonenumbers, and Powertools' ``Logger`` for observability); ``foreign_imports`` finds the others (boto3,
botocore, httpx...), in any form: ``import``, ``from ... import``, under ``TYPE_CHECKING``, in a function,
or ``importlib.import_module`` / ``__import__`` of a literal name.
``python -m tests.support.import_graph`` prints the edges between layers and the forbidden ones, if any;
tests/unit/test_layers.py fails when one appears.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "layers" / "core" / "python"
FUNCTIONS = ROOT / "functions"
LAYERS = ("base", "domain", "adapters", "composition", "api", "functions")
BASE_MODULES = frozenset(
    {"errors", "records", "settings", "observability", "invocation_deadline", "cold_start"}
)
# What the adapters may import of the domain: the ports they implement and the types those speak.
DOMAIN_VOCABULARY = frozenset({"memmy_kb.domain.ports", "memmy_kb.domain.storage", "memmy_kb.domain.engine"})
# What the domain may import besides memmy_kb and the standard library: top-level packages, and of
# Powertools only the logger (``from aws_lambda_powertools import Logger``).
DOMAIN_THIRD_PARTY = frozenset({"pydantic", "phonenumbers"})
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
            and self.target not in DOMAIN_VOCABULARY
        )

    @property
    def forbidden(self) -> bool:
        return self.upward or self.into_domain_rules


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
    return 1 if forbidden or foreign else 0


if __name__ == "__main__":
    sys.exit(main())
