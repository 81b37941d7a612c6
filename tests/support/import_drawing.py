"""Drawings of the import structure of the cloud's domain and of the desktop client, as Mermaid flowcharts.

Read from the source as the import graph reads it (``tests.support.import_graph.module_edges``: any form of
import, anywhere in a module; nothing is imported). A drawing has one node per part of its package: a
subpackage (``recall/``, ``sync/``) or a module directly in the package (``access.py``, ``sdk.py``), and
one arrow per part importing another, labelled with the number of (importing module, imported module)
pairs behind it when there is more than one. Imports inside a part are not drawn.

``python -m tests.support.import_drawing domain --root DIR`` prints the domain's drawing of the checkout at
DIR (``client`` the client's); ``python -m tests.support.import_drawing --update docs/architecture.md``
rewrites each drawing that a ``<!-- import drawing: NAME -->`` line marks in the document to the drawing
of this checkout. tests/unit/repository/test_import_drawings.py fails when one differs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tests.support.import_graph import ROOT, Source, module_edges


@dataclass(frozen=True)
class Package:
    """A package to draw: its dotted name and where it lies, from the repository's root."""

    name: str
    folder: str  # the folder holding the package's top (``layers/core/python`` for ``memmy_kb``)

    def path(self, root: Path) -> Path:
        return root / self.folder / self.name.replace(".", "/")


PACKAGES: Mapping[str, Package] = {
    "domain": Package("memmy_kb.domain", "layers/core/python"),
    "client": Package("memmy_kb_client", "client"),
}


def sources(package: Package, root: Path) -> dict[str, Source]:
    """Every module of ``package`` in the checkout at ``root``, by its dotted name."""
    top = package.path(root)
    if not top.is_dir():
        raise FileNotFoundError(f"{top} is not a folder: is {root} a checkout of the repository?")
    base = top.parents[package.name.count(".")]
    found: dict[str, Source] = {}
    for path in sorted(top.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(base).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        found[name] = Source(path.read_text(encoding="utf-8"), is_package, str(path.relative_to(root)))
    return found


def part_of(module: str, package: Package, sources: Mapping[str, Source]) -> str:
    """The node a module is drawn in: its subpackage (``recall/``), or itself when it lies directly in the
    package (``access.py``); the package's own ``__init__`` is ``__init__.py``."""
    if module == package.name:
        return "__init__.py"
    first = module[len(package.name) + 1 :].split(".")[0]
    head = f"{package.name}.{first}"
    return f"{first}/" if head in sources and sources[head].is_package else f"{first}.py"


@dataclass(frozen=True)
class Graph:
    parts: tuple[str, ...]  # every part, sorted
    arrows: Mapping[tuple[str, str], int]  # (importer, imported): how many module pairs

    @property
    def module_pairs(self) -> int:
        return sum(self.arrows.values())


def graph(name: str, root: Path = ROOT) -> Graph:
    """The parts of the package ``name`` (``domain`` or ``client``) in the checkout at ``root``, and the
    imports between them."""
    package = PACKAGES[name]
    found = sources(package, root)
    pairs = {
        (edge.source, edge.target)
        for module, source in found.items()
        for edge in module_edges(module, source, found)
    }
    arrows = Counter(
        (part_of(source, package, found), part_of(target, package, found)) for source, target in pairs
    )
    parts = {part_of(module, package, found) for module in found}
    if not any("__init__.py" in arrow for arrow in arrows):
        parts.discard("__init__.py")  # a package's own __init__ that imports nothing and is not imported
    return Graph(
        tuple(sorted(parts, key=_order)),
        {arrow: count for arrow, count in sorted(arrows.items()) if arrow[0] != arrow[1]},
    )


def _order(part: str) -> tuple[bool, str]:
    return not part.endswith("/"), part  # the subpackages first, then the modules


def _node(part: str) -> str:
    """A part's Mermaid id: letters, digits and underscores (``recall/``: ``recall_pkg``)."""
    return re.sub(r"\W", "_", part.removesuffix("/").removesuffix(".py")) + (
        "_pkg" if part.endswith("/") else "_mod"
    )


def mermaid(drawn: Graph) -> str:
    """The graph as a Mermaid flowchart, importers above what they import: a subpackage is a box, a
    module directly in the package a rounded box."""
    lines = [
        "flowchart TD",
        f"    %% {len(drawn.parts)} parts, {len(drawn.arrows)} arrows, "
        f"{drawn.module_pairs} module imports between parts",
    ]
    for part in drawn.parts:
        shape = f'["{part}"]' if part.endswith("/") else f'("{part}")'
        lines.append(f"    {_node(part)}{shape}")
    for (source, target), count in drawn.arrows.items():
        label = f"|{count}|" if count > 1 else ""
        lines.append(f"    {_node(source)} -->{label} {_node(target)}")
    return "\n".join(lines) + "\n"


def drawing(name: str, root: Path = ROOT) -> str:
    return mermaid(graph(name, root))


# A drawing in a Markdown document: the marker line, then a ```mermaid block. Its body is whole lines none
# of which opens a fence, so a marker whose block never closes is given up at the next fence line instead
# of at the document's end (with many such markers, that was quadratic).
MARKED = re.compile(r"(<!-- import drawing: (\w+) -->\n```mermaid\n)((?:(?!```)[^\n]*\n)*?)(^```$)", re.MULTILINE)


def marked_drawings(document: str) -> dict[str, str]:
    """Each drawing the document marks, by its name, as the document has it."""
    found: dict[str, str] = {}
    for match in MARKED.finditer(document):
        if match.group(2) in found:
            raise ValueError(f"the drawing {match.group(2)!r} is marked twice")
        found[match.group(2)] = match.group(3)
    return found


def updated(document: str, root: Path = ROOT) -> str:
    """The document with each marked drawing replaced by the drawing of the checkout at ``root``."""
    for name in marked_drawings(document):
        if name not in PACKAGES:
            raise ValueError(f"the document marks a drawing of {name!r}; there are {', '.join(PACKAGES)}")
    return MARKED.sub(lambda m: m.group(1) + drawing(m.group(2), root) + m.group(4), document)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.import_drawing", description=__doc__)
    parser.add_argument("package", nargs="?", choices=sorted(PACKAGES), help="print this package's drawing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to read (default: this one)")
    parser.add_argument("--update", type=Path, metavar="DOCUMENT", help="rewrite the drawings it marks")
    args = parser.parse_args(argv)
    if (args.package is None) == (args.update is None):
        parser.error("name a package to print, or a document to --update")
    try:
        if args.update is not None:
            document = args.update.read_text(encoding="utf-8")
            args.update.write_text(updated(document, args.root), encoding="utf-8")
        else:
            print(drawing(args.package, args.root), end="")
    except (OSError, ValueError) as error:
        print(f"import_drawing: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
