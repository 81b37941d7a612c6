"""Loading the Lambda handler modules named in template.yaml, as the Lambda runtime would.

Each function's ``CodeUri`` holds its own ``app.py``; they are loaded under distinct module names so
that two ``app`` modules never collide in one process.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from memmy_local.template import template_path


def repo_root() -> Path:
    return template_path().parent


def load_function_module(code_uri: str, handler: str, root: Path | None = None) -> ModuleType:
    """The module of ``handler`` (``app.lambda_handler``) inside ``code_uri``, loaded once per process."""
    module_file = handler.rsplit(".", 1)[0].replace(".", "/") + ".py"
    path = (root or repo_root()) / code_uri / module_file
    name = "memmy_function_" + Path(code_uri.rstrip("/")).name + "_" + module_file[:-3].replace("/", "_")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load handler module {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_handler(code_uri: str, handler: str, root: Path | None = None) -> Any:
    """The handler callable itself."""
    return getattr(load_function_module(code_uri, handler, root), handler.rsplit(".", 1)[1])
