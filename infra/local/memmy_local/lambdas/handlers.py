"""Loading the Lambda handler modules named in template.yaml, as the Lambda runtime would.

Each function's ``CodeUri`` holds its own ``app.py``; they are loaded under distinct module names so
that two ``app`` modules never collide in one process.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from memmy_local.template import template_path


def repo_root() -> Path:
    return template_path().parent


@contextlib.contextmanager
def overlaid_environment(variables: Mapping[str, str]) -> Iterator[None]:
    """``variables`` in os.environ for the duration, then the previous values back."""
    previous = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_function_module(
    code_uri: str, handler: str, root: Path | None = None, environment: Mapping[str, str] | None = None
) -> ModuleType:
    """The module of ``handler`` (``app.lambda_handler``) inside ``code_uri``, loaded once per process.

    ``environment`` is in effect while the module is first imported, as a function's is in Lambda.
    """
    module_path = handler.rpartition(".")[0]
    if not module_path:
        raise ValueError(f"Handler {handler!r} is not <module>.<function>")
    path = (root or repo_root()) / code_uri / (module_path.replace(".", "/") + ".py")
    # Keyed by the file's absolute path: two functions' app.py never collide, one file loads once.
    digest = hashlib.sha1(str(path.resolve()).encode(), usedforsecurity=False).hexdigest()[:12]
    name = f"memmy_function_{Path(code_uri.rstrip('/')).name}_{module_path.replace('.', '_')}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    return import_module_file(name, path, environment or {})


def import_module_file(name: str, path: Path, environment: Mapping[str, str]) -> ModuleType:
    """Import the file ``path`` as the module ``name`` with ``environment`` overlaid while it runs."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None or not path.is_file():
        raise FileNotFoundError(f"no handler module at {path}")
    module = importlib.util.module_from_spec(spec)
    # Registered before running so that dataclasses and pydantic can resolve the module's own names.
    sys.modules[name] = module
    try:
        with overlaid_environment(environment):
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_handler(code_uri: str, handler: str, root: Path | None = None) -> Any:
    """The handler callable itself."""
    return getattr(load_function_module(code_uri, handler, root), handler.rsplit(".", 1)[1])
