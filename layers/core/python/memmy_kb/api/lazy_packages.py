"""Two Powertools packages whose ``__init__`` imports every sibling module, made to import each one on first use.

``aws_lambda_powertools.event_handler``'s ``__init__`` imports every resolver Powertools has (AppSync's
brings ``asyncio``, then Bedrock's, VPC Lattice's...) and ``aws_lambda_powertools.utilities.data_classes``'s
every event class (CodePipeline's brings ``tempfile`` and ``zipfile``), although an API function uses one
resolver and the API Gateway event classes. Python runs a package's ``__init__`` before any of its modules,
so a plain ``from aws_lambda_powertools.event_handler.api_gateway import ...`` would pay for them all: about
0.15x ``import boto3`` on every API function's cold start (``bench/import_time.py``).

``install()`` puts each package in ``sys.modules`` unexecuted, with the package's real path (so its modules
import as always) and a module ``__getattr__``: a name its ``__init__`` re-exports is imported from the module
the ``__init__`` names for it (read from the ``__init__``'s own import statements, not copied here), on first
access, and a module of the package (``from aws_lambda_powertools.event_handler import content_types``) is
imported as such; any other name (``__all__``, a star import, ``VERSION``) runs the real ``__init__`` once, in that same
module, and answers from it. Nothing changes for callers: ``from aws_lambda_powertools.event_handler import
AppSyncResolver`` still works and imports AppSync's resolver then.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import sys
import types
from typing import Any, Final

LAZY_PACKAGES: Final = ("aws_lambda_powertools.event_handler", "aws_lambda_powertools.utilities.data_classes")


def _reexports(package: str, source: str) -> dict[str, str]:
    """``name -> module`` for each ``from <module> import name`` of an ``__init__``'s top level."""
    names = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ImportFrom):
            module = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            if module != package:  # ``from . import x``: the module x, which ``__getattr__`` imports as such
                names.update({alias.asname or alias.name: module for alias in node.names if alias.name != "*"})
    return names


def _lazy(package: str) -> types.ModuleType | None:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.loader is None or spec.origin is None or spec.submodule_search_locations is None:
        return None
    module = importlib.util.module_from_spec(spec)
    completed = False

    @functools.cache
    def reexports() -> dict[str, str]:
        # Read on the first name asked: a function that never asks (the ingest) pays nothing for it.
        with open(spec.origin, encoding="utf-8") as init:  # type: ignore[arg-type]  # checked above
            return _reexports(package, init.read())

    def __getattr__(name: str) -> Any:
        nonlocal completed
        if completed:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if name in reexports():
            value = getattr(importlib.import_module(reexports()[name]), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
            value = importlib.import_module(f"{package}.{name}")  # a module of the package, as ``from`` finds it
        else:
            completed = True  # first: the __init__ itself may ask for a name it has not bound yet
            spec.loader.exec_module(module)  # type: ignore[union-attr]  # checked above
            if name not in module.__dict__:
                raise AttributeError(f"module {package!r} has no attribute {name!r}")
            return module.__dict__[name]
        setattr(module, name, value)
        return value

    module.__getattr__ = __getattr__  # type: ignore[method-assign]  # PEP 562: a module's own __getattr__
    return module


def install() -> None:
    """Put each of ``LAZY_PACKAGES`` not imported yet in ``sys.modules``, importing its modules on first use."""
    for package in LAZY_PACKAGES:
        if package in sys.modules:
            continue
        module = _lazy(package)
        if module is not None:
            sys.modules[package] = module
            parent, _, child = package.rpartition(".")
            setattr(sys.modules[parent], child, module)
