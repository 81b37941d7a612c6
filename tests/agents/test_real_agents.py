"""Claude Code, Codex CLI and Gemini CLI, the pinned releases themselves, each run once non-interactively
against the fake model server, with our hook and our MCP server installed by ``memmy-kb hook install``.

Per agent, one turn asking ``QUESTION``: the agent runs ``memmy-kb hook AGENT``, which asks the desktop
service (logged in to the local stack as a user whose knowledge base holds the travel-expense document),
and our block reaches the model's first request; the fake model then asks for ``search_knowledge``, the
agent starts ``memmy-kb mcp`` and calls it, and the excerpt it returns reaches the next request as that
API's tool result. Each agent has a HOME of its own (its settings written there as a person's would be),
no update check and no telemetry, and reaches nothing but 127.0.0.1 (see ``conftest.py``).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
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
)
from tests.support.e2e_desktop import Desktop, clean_env, logged_in_desktop
from tests.support.e2e_recall import MARKER, QUESTION, user_with_the_document
from tests.support.fake_models import FakeModels
from tests.support.stack import CLI, RunningStack
from tests.support.stage import Stage

PREFACE = "以下是从用户知识库中检索到的摘录"
# The model's own query for search_knowledge: other words than the prompt's, the same document.
TOOL_QUERY = "住宿发票"


@pytest.fixture(scope="module")
def desktop(local_stack: RunningStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desktop]:
    reader = user_with_the_document(Stage.on_local(local_stack), f"agent-{uuid.uuid4().hex[:8]}", "Agent")
    with logged_in_desktop(tmp_path_factory.mktemp("desktop"), local_stack, reader.token) as running:
        yield running


@pytest.fixture
def models() -> Iterator[FakeModels]:
    yield from fake_models.serve(FakeModels(query=TOOL_QUERY))


def install(agent: str, desktop: Desktop, env: dict[str, str]) -> None:
    """``memmy-kb hook install AGENT`` and ``... --mcp``, as the person runs them (their HOME, the
    service's ``MEMMY_KB_HOME``)."""
    for extra in ([], ["--mcp"]):
        done = subprocess.run(  # noqa: S603 - our own CLI
            [*CLI, "hook", "install", agent, *extra],
            env={**clean_env(desktop.home), **env},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr


# -- Each agent, as a person sets it up ------------------------------------------------------------------


def claude_code(bin_dir: Path, models: FakeModels, desktop: Desktop, home: Path, work: Path) -> Run:
    env = claude_env(home, models.url)
    install("claude-code", desktop, {"HOME": str(home)})
    # -p runs no permission prompt: the MCP tool is allowed by name, as `/permissions` would.
    argv = [str(bin_dir / "claude"), "-p", QUESTION, "--output-format", "json"]
    argv += ["--allowedTools", "mcp__memmy-kb__search_knowledge"]
    return run_agent(argv, home, work, env)


def codex(bin_dir: Path, models: FakeModels, desktop: Desktop, home: Path, work: Path) -> Run:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True)
    # The person's own config.toml first: the model provider; `hook install --mcp` appends our server.
    (codex_home / "config.toml").write_text(codex_config(models.url))
    env = agent_env(home, CODEX_HOME=str(codex_home), **{MODEL_KEY_ENV: "fake"})
    install("codex", desktop, {"HOME": str(home), "CODEX_HOME": str(codex_home)})
    trust_codex_hooks(bin_dir, codex_home, work, env)
    argv = [str(bin_dir / "codex"), "exec", "--skip-git-repo-check", QUESTION]
    return run_agent(argv, home, work, env)


def trust_codex_hooks(bin_dir: Path, codex_home: Path, work: Path, env: dict[str, str]) -> None:
    """What trusting our hook in Codex's ``/hooks`` saves: ``[hooks.state."KEY"] trusted_hash = HASH`` in
    ``config.toml``, for the hook's key and current hash as ``codex app-server`` lists them
    (``hooks/list``). ``codex exec`` skips a hook without it, silently."""
    messages = [
        {"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "memmy-tests", "version": "1"}}},
        {"method": "initialized"},
        {"id": 2, "method": "hooks/list", "params": {"cwds": [str(work)]}},
    ]
    server = subprocess.Popen(  # noqa: S603 - the pinned agent's own protocol server
        [str(bin_dir / "codex"), "app-server"],
        cwd=work,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    try:
        server.stdin.write("".join(json.dumps(message) + "\n" for message in messages))
        server.stdin.flush()
        listed: dict[str, Any] = {}
        for line in server.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:  # the hooks/list request above
                listed = reply
                break
    finally:
        server.kill()
        server.wait(timeout=10)
    hooks = [hook for entry in listed["result"]["data"] for hook in entry["hooks"]]
    ours = [hook for hook in hooks if "memmy-kb" in hook["command"] and hook["trustStatus"] != "trusted"]
    assert len(ours) == 1, hooks
    with (codex_home / "config.toml").open("a") as config:
        config.write(
            f"\n[hooks.state.{json.dumps(ours[0]['key'])}]\ntrusted_hash = {json.dumps(ours[0]['currentHash'])}\n"
        )


def gemini(bin_dir: Path, models: FakeModels, desktop: Desktop, home: Path, work: Path) -> Run:
    # The hooks system on, and this folder trusted (Gemini CLI runs no hooks in an untrusted one).
    gemini_settings(home, work, "memmy-kb", "search_knowledge", hooksConfig={"enabled": True})
    env = agent_env(home, GOOGLE_GEMINI_BASE_URL=models.url, GEMINI_API_KEY="fake")
    install("gemini", desktop, {"HOME": str(home)})
    argv = [str(bin_dir / "gemini"), "-p", QUESTION, "-m", "gemini-2.5-flash"]
    return run_agent(argv, home, work, env)


AGENTS = {
    "claude-code": (claude_code, "anthropic"),
    "codex": (codex, "openai"),
    "gemini": (gemini, "gemini"),
}


@pytest.mark.parametrize("agent", list(AGENTS))
def test_the_agent_sends_our_block_and_our_tools_excerpt_to_its_model(
    agent, agents_bin, desktop, models, tmp_path
):
    setup, api_name = AGENTS[agent]
    api = APIS[api_name]
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(parents=True)

    run = setup(agents_bin, models, desktop, home, work)

    logged = [entry.body for entry in models.of(api_name) if isinstance(entry.body, dict)]
    # Everything the model was sent, for reading after a failure.
    dump = tmp_path / "requests.json"
    dump.write_text(json.dumps([entry.__dict__ for entry in models.requests], ensure_ascii=False, indent=1))
    (tmp_path / "agent-output.txt").write_text(run.output())
    summary = "\n".join(f"{e.api} {e.method} {e.path}" for e in models.requests) + f"\n(all in {dump})"
    assert run.done.returncode == 0, f"{run.output()}\nrequests:\n{summary}"
    # The hook: the turn that carries the prompt carries our block.
    turns = [body for body in logged if QUESTION in api.prompt_text(body)]
    assert turns, f"no request carried the prompt:\n{summary}"
    assert PREFACE in api.prompt_text(turns[0]), api.prompt_text(turns[0])[:3000]
    assert MARKER in api.prompt_text(turns[0])
    record = json.loads((desktop.state_dir / f"hook-last-{agent}.json").read_text())
    assert record["outcome"] == "ok"
    # The MCP server: the model asked for search_knowledge, and the excerpt came back as a tool result.
    results = [result for body in logged for result in api.tool_results(body)]
    assert results, f"no request carried a tool result:\n{summary}\n{run.output()}"
    assert any(MARKER in result for result in results), results
