"""The client's layers, read from the source (nothing is imported): which part of ``memmy_kb_client`` may
import which.

Lowest first: ``base``, the package's top-level modules that every part uses (the SDK and its error, the
HTTP client, the upload's POST, the recall's contract and reply); ``home``, the plumbing every part stands
on (the state directory, the secrets and the service record, the proof, the control client, advice);
``sync`` and ``agents`` over them, side by side (neither imports the other); ``desktop``, the local
service, over ``sync`` (its linked folders) but never ``agents``; ``cli`` over them all; and ``entry``, the
console script and ``python -m memmy_kb_client.cli`` (which runs it), on top. An import counts in any form the import graph sees (module level, in a function,
under ``TYPE_CHECKING``, ``importlib.import_module`` of a literal name): one that reaches a part its own
may not import is forbidden. ``tests/unit/repository/test_client_layers.py`` fails when one appears.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tests.support.import_graph import Edge, Source, module_edges, repository_sources

PACKAGE = "memmy_kb_client"
# Each part, and the parts it may import (its own included).
MAY_IMPORT: Mapping[str, frozenset[str]] = {
    "base": frozenset({"base"}),
    "home": frozenset({"home", "base"}),
    "sync": frozenset({"sync", "home", "base"}),
    "agents": frozenset({"agents", "home", "base"}),
    "desktop": frozenset({"desktop", "sync", "home", "base"}),
    "cli": frozenset({"cli", "desktop", "sync", "agents", "home", "base"}),
    "entry": frozenset({"entry", "cli", "desktop", "sync", "agents", "home", "base"}),
}
SUBPACKAGES = frozenset({"home", "sync", "agents", "desktop", "cli"})
BASE_MODULES = frozenset(
    {
        "api_error",
        "connection_replies",
        "connection_sdk",
        "http_client",
        "recall_contract",
        "recall_reply",
        "replies",
        "sdk",
        "storage_post",
        "team_replies",
        "team_sdk",
    }
)
ENTRY_MODULES = frozenset({f"{PACKAGE}.entry", f"{PACKAGE}.cli.__main__"})


def part_of(module: str) -> str:
    """The part a dotted module name of the client belongs to (``memmy_kb_client.home.paths``: ``home``)."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        raise ValueError(f"{module} is not a module of the client")
    if len(parts) == 1 or parts[1] in BASE_MODULES:
        return "base"
    if module in ENTRY_MODULES:
        return "entry"
    if parts[1] in SUBPACKAGES:
        return parts[1]
    raise ValueError(
        f"{module} belongs to no part of the client: put it in a subpackage or name it a base module"
    )


def forbidden(edge: Edge) -> bool:
    """Does ``edge`` (an import by a client module) reach a part its own may not import?"""
    return part_of(edge.target) not in MAY_IMPORT[part_of(edge.source)]


def client_edges(sources: Mapping[str, Source] | None = None) -> list[Edge]:
    """Every import of a client module by a client module."""
    sources = repository_sources() if sources is None else sources
    return [
        edge
        for name, source in sources.items()
        if name.split(".")[0] == PACKAGE
        for edge in module_edges(name, source, sources)
        if edge.target.split(".")[0] == PACKAGE
    ]


def forbidden_imports(sources: Mapping[str, Source] | None = None) -> list[str]:
    """Each forbidden import, as ``source:line imports target (part -> part)``."""
    return [
        f"{e.source}:{e.line} imports {e.target} ({part_of(e.source)} -> {part_of(e.target)})"
        for e in client_edges(sources)
        if forbidden(e)
    ]


def imports_of(code: str, module: str, known: Collection[str]) -> list[Edge]:
    """The client modules that ``code``, read as the module ``module``, imports (``known``: the
    repository's module names)."""
    return [e for e in module_edges(module, Source(code), known) if e.target.split(".")[0] == PACKAGE]
