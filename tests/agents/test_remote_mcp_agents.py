"""Claude Code, Codex CLI and Gemini CLI (the pinned releases) configured with the cloud's remote MCP
endpoint over HTTP, as interoperability tests: each searches the person's KB through ``POST /mcp``.

Each agent gets the endpoint's URL and an MCP token minted by ``memmy-local token USER --mcp`` (the
token an OAuth client would hold on its own servers), in its own configuration format; no hook and no
desktop service. The fake model asks for the ``search`` tool; the excerpt the endpoint returns must reach
the model's next request as that API's tool result. This proves the endpoint speaks to the three
clients; the product's docs still send local agents through the desktop, never the remote endpoint.
Offline like ``test_real_agents.py`` (see ``conftest.py``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import fake_models
from tests.support.agent_runs import (
    APIS,
    MODEL_KEY_ENV,
    Run,
    agent_env,
    claude_env,
    codex_config,
    gemini_settings,
    run_agent,
    write_json,
)
from tests.support.e2e_recall import MARKER, QUESTION, user_with_the_document
from tests.support.fake_models import FakeModels
from tests.support.remote_mcp import mcp_token
from tests.support.stack import RunningStack
from tests.support.stage import Stage

SERVER = "memmy-cloud"
TOOL = "search"
TOOL_QUERY = "住宿发票"
TOKEN_ENV = "MEMMY_MCP_TOKEN"


@pytest.fixture(scope="module")
def token(local_stack: RunningStack) -> str:
    """An MCP token for a person whose KB holds the travel-expense document, as ``memmy-local token --mcp``
    prints it."""
    reader = user_with_the_document(Stage.on_local(local_stack), f"remote-{uuid.uuid4().hex[:8]}", "Remote")
    return mcp_token(local_stack.key_path.parent, reader.user_id)


@pytest.fixture
def models() -> Iterator[FakeModels]:
    yield from fake_models.serve(FakeModels(query=TOOL_QUERY, tool=TOOL))


Setup = Callable[[Path, FakeModels, str, str, Path, Path], Run]


def claude_code(bin_dir: Path, models: FakeModels, url: str, token: str, home: Path, work: Path) -> Run:
    config = work / "memmy-cloud.mcp.json"
    headers = {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}  # Claude Code expands ${VAR} in headers
    write_json(config, {"mcpServers": {SERVER: {"type": "http", "url": url, "headers": headers}}})
    env = claude_env(home, models.url, **{TOKEN_ENV: token})
    argv = [str(bin_dir / "claude"), "-p", QUESTION, "--output-format", "json"]
    argv += ["--mcp-config", str(config), "--strict-mcp-config", "--allowedTools", f"mcp__{SERVER}__{TOOL}"]
    return run_agent(argv, home, work, env)


def codex(bin_dir: Path, models: FakeModels, url: str, token: str, home: Path, work: Path) -> Run:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        codex_config(models.url)
        # The token stays in the environment: Codex refuses an inline bearer token in config.toml.
        + f'\n[mcp_servers.{SERVER}]\nurl = "{url}"\nbearer_token_env_var = "{TOKEN_ENV}"\n'
    )
    env = agent_env(home, CODEX_HOME=str(codex_home), **{MODEL_KEY_ENV: "fake", TOKEN_ENV: token})
    argv = [str(bin_dir / "codex"), "exec", "--skip-git-repo-check", QUESTION]
    return run_agent(argv, home, work, env)


def gemini(bin_dir: Path, models: FakeModels, url: str, token: str, home: Path, work: Path) -> Run:
    # httpUrl: Streamable HTTP (a bare url means the older SSE transport).
    remote = {SERVER: {"httpUrl": url, "headers": {"Authorization": f"Bearer {token}"}}}
    gemini_settings(home, work, SERVER, TOOL, mcpServers=remote)
    env = agent_env(home, GOOGLE_GEMINI_BASE_URL=models.url, GEMINI_API_KEY="fake")
    argv = [str(bin_dir / "gemini"), "-p", QUESTION, "-m", "gemini-2.5-flash"]
    return run_agent(argv, home, work, env)


AGENTS: dict[str, tuple[Setup, str]] = {
    "claude-code": (claude_code, "anthropic"),
    "codex": (codex, "openai"),
    "gemini": (gemini, "gemini"),
}


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_agent_searches_through_the_remote_endpoint_and_sends_the_excerpt_to_its_model(
    agent: str,
    agents_bin: Path,
    local_stack: RunningStack,
    token: str,
    models: FakeModels,
    tmp_path: Path,
) -> None:
    setup, api_name = AGENTS[agent]
    api = APIS[api_name]
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)

    run = setup(agents_bin, models, f"{local_stack.api_url}/mcp", token, home, work)

    logged: list[dict[str, Any]] = [
        entry.body for entry in models.of(api_name) if isinstance(entry.body, dict)
    ]
    dump = tmp_path / "requests.json"
    dump.write_text(json.dumps([entry.__dict__ for entry in models.requests], ensure_ascii=False, indent=1))
    summary = "\n".join(f"{e.api} {e.method} {e.path}" for e in models.requests) + f"\n(all in {dump})"
    assert run.done.returncode == 0, f"{run.output()}\nrequests:\n{summary}"
    results = [result for body in logged for result in api.tool_results(body)]
    assert results, f"no request carried a tool result:\n{summary}\n{run.output()}"
    # No hook and no desktop service here: the excerpt can only have come through /mcp.
    assert any(MARKER in result for result in results), results
