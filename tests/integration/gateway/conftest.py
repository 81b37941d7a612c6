"""The local gateway's tests' fixtures: one gateway over real HTTP for the whole package, on a template of
its own (tests/support/gateway_functions.py), with a signing key, a token, and what the functions saw."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_local import tokens
from memmy_local.gateway.authorizer import JwtAuthorizer
from memmy_local.gateway.server import Gateway, GatewayConfig
from memmy_local.template import function_environment, load_template
from tests.support.gateway_functions import (
    AUDIENCE,
    BROKEN_HANDLER,
    ECHO_HANDLER,
    ISSUER,
    POOL_HANDLER,
    POOL_SHARED,
    POOL_SHARED_MODULE,
    REFS,
    SPECIAL_HANDLER,
    TEMPLATE,
)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture(scope="package")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home") / tokens.KEY_FILE_NAME


@pytest.fixture(scope="package")
def gateway(tmp_path_factory: pytest.TempPathFactory, key_path: Path) -> Iterator[Gateway]:
    repo = tmp_path_factory.mktemp("repo")
    _write(repo / "template.yaml", TEMPLATE)
    _write(repo / "functions/echo/app.py", ECHO_HANDLER)
    _write(repo / "functions/special/app.py", SPECIAL_HANDLER)
    _write(repo / "functions/broken/app.py", BROKEN_HANDLER)
    _write(repo / "shared" / f"{POOL_SHARED_MODULE}.py", POOL_SHARED)
    for directory, router in (("pool", "router"), ("other_pool", "other_router")):
        _write(
            repo / f"functions/{directory}/app.py",
            POOL_HANDLER.format(shared=POOL_SHARED_MODULE, router=router),
        )
    template = load_template(repo / "template.yaml")
    functions = ("EchoFunction", "SpecialFunction", "BrokenFunction", "PoolFunction", "OtherPoolFunction")
    environments = {name: function_environment(template, name, REFS) for name in functions}
    authorizer = JwtAuthorizer(tokens.load_signing_key(key_path), ISSUER, AUDIENCE)
    config = GatewayConfig(
        template_path=repo / "template.yaml",
        authorizer=authorizer,
        port=0,
        refs=REFS,
        environments=environments,
    )
    mp = pytest.MonkeyPatch()
    # The pool functions' shared module stands for the core layer, importable by every function.
    mp.syspath_prepend(str(repo / "shared"))
    # What the stack does: the union of the functions' environments, set once.
    mp.setenv("TABLE_NAME", REFS["Table"])
    mp.setenv("POWERTOOLS_SERVICE_NAME", "global-service")
    with Gateway(config) as running:
        yield running
    mp.undo()


@pytest.fixture
def client(gateway: Gateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=10) as http:
        yield http


@pytest.fixture
def token(key_path: Path) -> str:
    return tokens.issue_token(
        "alice", name="Alice", email="alice@example.com", phone="+15550100", key_path=key_path
    )


@pytest.fixture
def invocations(gateway: Gateway) -> list[dict[str, Any]]:
    handler = gateway.functions["EchoFunction"].handler
    assert handler is not None
    calls = sys.modules[handler.__module__].INVOCATIONS
    calls.clear()
    return calls


@pytest.fixture
def pool(gateway: Gateway) -> Iterator[Any]:
    """The pool functions' shared module, with its log lines and counters reset."""
    shared = importlib.import_module(POOL_SHARED_MODULE)
    shared.LOG.lines.clear()
    shared.ACTIVE.update(now=0, max=0)
    shared.RELEASE.clear()
    yield shared
    shared.RELEASE.set()  # never leave a request held
