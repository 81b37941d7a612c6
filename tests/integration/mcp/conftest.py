"""The endpoint's integration tests: ``mcp``, the ``mcp`` function's environment on a JWKS served on
127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memmy_kb.composition import reset_composition
from tests.support.mcp_tokens import ISSUER, RESOURCE, JwksServer, jwks_of, signing_key


@pytest.fixture(scope="session")
def mcp_key_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(tmp_path_factory.mktemp("mcp-key"))


@pytest.fixture(scope="session")
def mcp_key(mcp_key_folder: Path) -> Any:
    """The authorization server's signing key (as the dev provider's: one key for desktop and MCP tokens)."""
    return signing_key(mcp_key_folder)


@pytest.fixture
def jwks(mcp_key: Any) -> Iterator[JwksServer]:
    with JwksServer(jwks_of(mcp_key)).serving() as server:
        yield server


@pytest.fixture
def mcp(service: Any, jwks: JwksServer, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The service with the ``mcp`` function's MCP_* settings; the per-KB plan (documents are put into MemOS
    without fingerprints) and a burst no test but the limit's reaches."""
    for name, value in {
        "MCP_TOKEN_ISSUER": ISSUER,
        "MCP_JWKS_URL": jwks.url,
        "MCP_RESOURCE_URL": RESOURCE,
        "MCP_AUTHORIZATION_SERVER": ISSUER,
        "RECALL_ATTRIBUTION": "per_kb",
        "RECALL_BURST": "1000",
    }.items():
        monkeypatch.setenv(name, value)
    reset_composition()
    return service
