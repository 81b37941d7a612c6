"""The ``memmy-local`` command (the local development stack) and the ``memmy-kb dev`` alias that forwards to
it, or says how to install it where only the client is installed."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from memmy_kb_client.cli import main as client_cli
from memmy_kb_client.home.advice import default_home, program
from memmy_local import cli as local_cli
from memmy_local import desktop_side
from tests.support.stack import CLI, LOCAL_CLI

SUBCOMMANDS = {
    "up": [
        "--port",
        "--memos-port",
        "--moto-port",
        "--control-port",
        "--idp-port",
        "--access-token-ttl",
        "--data-dir",
        "--schedule-interval",
        "--no-desktop",
        "--desktop-port",
    ],
    "token": ["USER", "--name", "--email", "--phone", "--ttl", "--data-dir", "--mcp", "--client-name"],
    "reconcile": ["--data-dir", "--function", "--timeout"],
    "memos": ["--host", "--port", "--prefix", "--api-key", "--db", "--processing-delay"],
}


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own console scripts
        command, capture_output=True, text=True, timeout=60, check=False, env={**os.environ}
    )


def test_memmy_local_help_lists_its_four_commands() -> None:
    done = run([*LOCAL_CLI, "--help"])

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: memmy-local")
    for name in SUBCOMMANDS:
        assert name in done.stdout


@pytest.mark.parametrize("command", sorted(SUBCOMMANDS))
def test_each_memmy_local_command_has_its_help(command: str) -> None:
    done = run([*LOCAL_CLI, command, "--help"])

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: memmy-local {command}")
    for option in SUBCOMMANDS[command]:
        assert option in done.stdout


def test_memmy_kb_dev_forwards_to_memmy_local_when_it_is_installed() -> None:
    done = run([*CLI, "dev", "up", "--help"])

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: memmy-local up")
    assert "--schedule-interval" in done.stdout


def test_memmy_kb_dev_token_prints_what_memmy_local_token_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path))

    assert client_cli.main(["dev", "token", "alice", "--name", "Alice"]) == 0
    token = capsys.readouterr().out.strip()

    assert token.count(".") == 2  # a JWT, signed with the home's key


def test_memmy_kb_help_lists_dev_without_loading_the_local_stack() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys\nfrom memmy_kb_client.cli.main import main\ntry:\n    main(['--help'])\n"
            "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if m.startswith('memmy_local')))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )

    assert "dev " in done.stdout
    assert done.stdout.rstrip().endswith("[]")


def test_memmy_kb_dev_without_the_local_stack_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # As where only the client is installed: the import of memmy_local fails.
    monkeypatch.setitem(sys.modules, "memmy_local", None)
    monkeypatch.setitem(sys.modules, "memmy_local.cli", None)

    assert client_cli.main(["dev", "up", "--help"]) == 2

    err = capsys.readouterr().err
    assert "install the local stack (make run / pip install -e .[local])" in err
    assert "memmy-local up" in err
    assert "Traceback" not in err


STACK = SimpleNamespace(
    api_url="http://127.0.0.1:8080",
    memos_api_url="http://127.0.0.1:8090/api/openmem/v1",
    memos_url="http://127.0.0.1:8090",
    moto_url="http://127.0.0.1:5000",
    control_url="http://127.0.0.1:8081",
    idp_url="http://127.0.0.1:8070",
    issuer="http://127.0.0.1:8070",
)


def test_the_ready_message_names_memmy_local_commands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    desktop_side.print_ready(STACK, tmp_path)  # type: ignore[arg-type]

    out = capsys.readouterr().out
    local = program("memmy-local")
    assert f"{local} token alice --name Alice --email alice@example.com --data-dir {tmp_path}" in out
    assert f"({local} reconcile --data-dir {tmp_path})" in out
    assert "Memmy local stack ready at http://127.0.0.1:8080\n" in out
    assert "  IdP:    http://127.0.0.1:8070  (dev sign-in; issuer http://127.0.0.1:8070)" in out
    assert "memmy-kb dev" not in out


def test_the_banner_names_each_command_as_the_shell_can_run_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a fresh checkout: the scripts are in .venv/bin, which is not on PATH.
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python", "memmy-kb", "memmy-local"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setattr(sys, "argv", [str(bin_dir / "memmy-local"), "up"])
    monkeypatch.setenv("PATH", "/nonexistent")
    desktop = SimpleNamespace(url="http://127.0.0.1:8765")
    demo_home = tmp_path / "home" / "demo"
    monkeypatch.setattr(
        "memmy_kb_client.desktop.status_text.describe", lambda service, home=None: "(the desktop service)"
    )

    desktop_side.print_ready(STACK, None, desktop, home=tmp_path / "home")  # type: ignore[arg-type]
    plain = capsys.readouterr().out
    desktop_side.print_ready(STACK, None, desktop, home=demo_home, demo=True)  # type: ignore[arg-type]
    demo = capsys.readouterr().out

    assert 'TOKEN="$(.venv/bin/memmy-local token alice' in plain
    home = tmp_path / "home"
    assert f"MEMMY_KB_HOME={home} .venv/bin/memmy-kb desktop login   # sign in" in plain
    assert f"MEMMY_KB_HOME={home} .venv/bin/memmy-kb hook install claude-code" in plain
    assert "press Enter here for a link to the knowledge-base page" in plain
    assert f"MEMMY_KB_HOME={demo_home} .venv/bin/memmy-kb hook install claude-code" in demo
    assert f"(or run MEMMY_KB_HOME={demo_home} .venv/bin/memmy-kb desktop open)" in demo
    assert "desktop login" not in demo  # the demo's service is signed in already
    # On PATH, the bare name
    monkeypatch.setenv("PATH", str(bin_dir))
    desktop_side.print_ready(STACK, None, desktop, home=Path(default_home()))  # type: ignore[arg-type]
    on_path = capsys.readouterr().out
    assert 'TOKEN="$(memmy-local token alice' in on_path
    assert "Desktop:      memmy-kb desktop login   #" in on_path


def test_the_demo_has_a_home_of_its_own_under_the_usual_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path))

    assert desktop_side.desktop_home(demo=False) == tmp_path
    assert desktop_side.desktop_home(demo=True) == tmp_path / "demo"


def test_the_stack_says_how_it_was_started_under_make_or_not(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MAKELEVEL", "1")
    assert desktop_side.launcher([]).command == "make run"
    assert desktop_side.launcher(["--demo"]).command == "make run ARGS=--demo"
    assert desktop_side.launcher(["--demo", "--port", "0"]).command == "make run ARGS='--demo --port 0'"
    assert desktop_side.launcher([]).directory == str(tmp_path)
    monkeypatch.delenv("MAKELEVEL")
    assert desktop_side.launcher(["--demo"]).command == f"{program('memmy-local')} up --demo"


def test_each_enter_prints_a_new_page_link(capsys: pytest.CaptureFixture[str]) -> None:
    codes = iter(["first", "second"])
    desktop = SimpleNamespace(
        url="http://127.0.0.1:8765",
        state=SimpleNamespace(sessions=SimpleNamespace(new_code=lambda: next(codes))),
    )

    desktop_side.page_links_on_enter(desktop, ["\n", "\n"])  # type: ignore[arg-type]

    assert capsys.readouterr().out.splitlines() == [
        "  page: http://127.0.0.1:8765/open?code=first  (one use, within 10 minutes)",
        "  page: http://127.0.0.1:8765/open?code=second  (one use, within 10 minutes)",
    ]


@pytest.fixture
def logging_as_it_was() -> Iterator[None]:
    """``up`` quiets library loggers for the console; in a test process that would outlive the test (the
    log-hygiene test counts the httpx lines of every function)."""
    names = (None, "werkzeug", "httpx", "botocore")
    levels = {name: logging.getLogger(name).level for name in names}
    handlers = list(logging.getLogger().handlers)
    yield
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)
    logging.getLogger().handlers[:] = handlers


def test_up_hands_every_port_to_the_stack_and_names_the_options_when_one_is_taken(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], logging_as_it_was: None
) -> None:
    from memmy_local import stack as stack_module

    configs: list[stack_module.StackConfig] = []

    class TakenPortStack:
        def __init__(self, config: stack_module.StackConfig) -> None:
            configs.append(config)

        def __enter__(self) -> None:
            raise stack_module.StackStartError(
                "the control port 8104 on 127.0.0.1 is not available", "--control-port", 8104
            )

        def __exit__(self, *exc: object) -> None:
            pass

    monkeypatch.setattr(stack_module, "LocalStack", TakenPortStack)
    monkeypatch.setattr(local_cli.signal, "signal", lambda *args: None)
    argv = ["up", "--port", "8101", "--memos-port", "8102", "--moto-port", "8103", "--control-port", "8104"]
    argv += ["--idp-port", "8105", "--access-token-ttl", "120"]

    monkeypatch.setenv("MAKELEVEL", "1")  # as `make run ARGS=...` runs it
    code = local_cli.main([*argv, "--no-desktop"])

    (config,) = configs
    assert (config.gateway_port, config.memos_port, config.moto_port, config.control_port) == (
        8101,
        8102,
        8103,
        8104,
    )
    assert (config.idp_port, config.access_token_ttl) == (8105, 120)
    assert config.mcp_authorization == "dev"
    assert code == 1
    said = capsys.readouterr().err
    # The option that moves the port in the way, as make run and as memmy-local up, the others kept
    rest = (
        "--port 8101 --memos-port 8102 --moto-port 8103 --idp-port 8105 --access-token-ttl 120 --no-desktop"
    )
    assert f"make run ARGS='{rest} --control-port 8106'" in said  # 8105 is the IdP's
    assert f"{program('memmy-local')} up {rest} --control-port 8106 (--control-port 0: any free port)" in said
    assert "--port, --memos-port, --moto-port, --idp-port, --desktop-port" in said


def test_the_identity_provider_defaults_to_port_8070_and_one_hour_tokens() -> None:
    from memmy_local import tokens
    from memmy_local.stack import StackConfig

    args = local_cli.build_parser().parse_args(["up"])

    assert (args.idp_port, args.access_token_ttl) == (8070, 3600)
    assert (StackConfig().idp_port, StackConfig().access_token_ttl) == (8070, 3600)
    assert tokens.DEFAULT_ISSUER == "http://127.0.0.1:8070"


def test_mcp_clients_get_the_dev_providers_tokens_unless_the_services_own_server_is_asked_for() -> None:
    from memmy_local.stack import StackConfig

    parser = local_cli.build_parser()

    assert parser.parse_args(["up"]).mcp_authorization == StackConfig().mcp_authorization == "dev"
    assert parser.parse_args(["up", "--mcp-authorization", "service"]).mcp_authorization == "service"
    with pytest.raises(SystemExit):
        parser.parse_args(["up", "--mcp-authorization", "cognito"])


def test_token_signs_with_the_running_stacks_issuer_else_the_default_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import jwt

    from memmy_local import tokens
    from memmy_local.control import state_file

    monkeypatch.setenv("MEMMY_KB_HOME", str(tmp_path))

    def issued() -> str:
        assert local_cli.main(["token", "alice"]) == 0
        token = capsys.readouterr().out.strip()
        return str(jwt.decode(token, options={"verify_signature": False})["iss"])

    assert issued() == tokens.DEFAULT_ISSUER
    state_file(tmp_path).write_text('{"issuer": "http://127.0.0.1:43210"}')
    assert issued() == "http://127.0.0.1:43210"


def test_the_control_port_is_any_free_one_unless_chosen() -> None:
    args = local_cli.build_parser().parse_args(["up"])

    assert args.control_port == 0


def test_token_without_data_dir_signs_with_the_key_of_the_running_stacks_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The README's `memmy-local token alice | memmy-kb desktop login --token -` beside a stack started
    # with --data-dir: signed with the usual home's key, every command got 503 cloud_login_rejected.
    import contextlib

    from memmy_local import tokens
    from memmy_local.control import state_file
    from memmy_local.stack_config import StackConfig
    from memmy_local.stack_parts import start_control

    home, data_dir = tmp_path / "home", tmp_path / "data"
    monkeypatch.setenv(tokens.HOME_ENV, str(home))
    issuer = "http://127.0.0.1:43210"
    idp = SimpleNamespace(issuer=issuer, url=issuer)
    schedules = SimpleNamespace(run=lambda function: None, functions=[])
    with contextlib.ExitStack() as undo:
        config = StackConfig(data_dir=data_dir, control_port=0)
        start_control(undo, config, schedules, api_url="http://api", moto_url="http://moto", idp=idp)  # type: ignore[arg-type]

        assert local_cli.main(["token", "alice"]) == 0

        token = capsys.readouterr().out.strip()
        key = tokens.load_signing_key(tokens.signing_key_path(data_dir))
        assert (
            tokens.verify_token(token, key=key, issuer=issuer, audience=tokens.DEFAULT_AUDIENCE)["sub"]
            == "alice"
        )
    assert not state_file(home).exists()  # the stack's records go with it
    assert not state_file(data_dir).exists()
