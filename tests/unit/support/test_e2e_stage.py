"""The e2e tier's stage (tests/support/stage.py): a deployed stage's people come from the operator's token
command under the run's names, what only the local signer can make is refused there, a failing command is
named without its output, and the tests marked ``local_stack`` are skipped there with their reason.

The whole path against a separately started stack is tests/e2e/test_stage_e2e.py.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jwt
import pytest

from tests.support import stage as stage_module
from tests.support.stage import Stage, mark_local_only, run_id, stage_settings, token_claims

# A token command: logs its arguments (one JSON line each run) and prints a token whose sub names the user.
COMMAND = """
import json, sys, time, jwt
with open(sys.argv[1], "a") as log:
    log.write(json.dumps(sys.argv[2:]) + "\\n")
print("note: signing in")
print(jwt.encode({"sub": "sub-" + sys.argv[2], "exp": int(time.time()) + int(sys.argv[3])}, "k" * 32, "HS256"))
"""


def command(tmp_path: Path, lifetime: int = 3600, script: str = COMMAND) -> tuple[str, Path]:
    """A token command (as the operator gives it, one string) and the file its runs are logged in; each
    token lives ``lifetime`` seconds."""
    (tmp_path / "command.py").write_text(script)
    log = tmp_path / "runs.jsonl"
    # The command takes the user name and the claims after its own arguments; the lifetime goes first.
    wrapper = tmp_path / "wrapper.py"
    wrapper.write_text(
        "import runpy, sys\n"
        f"sys.argv = [sys.argv[0], {str(log)!r}, sys.argv[1], {str(lifetime)!r}, *sys.argv[2:]]\n"
        f"runpy.run_path({str(tmp_path / 'command.py')!r}, run_name='__main__')\n"
    )
    return f"{sys.executable} {wrapper}", log


def runs(log: Path) -> list[list[str]]:
    return [json.loads(line)[:1] + json.loads(line)[2:] for line in log.read_text().splitlines()]


def test_a_deployed_stage_makes_its_people_with_the_command_under_the_runs_names(tmp_path: Path) -> None:
    # Given a deployed stage whose token command prints a token for the name it is given
    given, log = command(tmp_path)
    stage = Stage.deployed("https://api.example.test/", given, run_id="run1")

    # When a test asks for two people, one with profile claims
    owner = stage.user("owner-ab12", name="产品经理", phone="+8613800138000")
    reader = stage.user("reader-ab12")

    # Then each is made by the command under the run's name, with memmy-local token's arguments
    assert runs(log) == [
        ["memmy-e2e-run1-owner-ab12", "--name", "产品经理", "--phone", "+8613800138000"],
        ["memmy-e2e-run1-reader-ab12"],
    ]
    # And the user id is the token's sub, the token the command's last line
    assert (owner.user_id, reader.user_id) == (
        "sub-memmy-e2e-run1-owner-ab12",
        "sub-memmy-e2e-run1-reader-ab12",
    )
    assert token_claims(owner.token)["sub"] == owner.user_id
    # And the stage's KBs carry the run's prefix; its URL loses the output's trailing slash
    assert stage.kb_name("资料") == "e2e-run1 资料"
    assert stage.api_url == "https://api.example.test"


def test_on_the_local_stack_people_are_signed_as_before_and_names_stay() -> None:
    class Signer:
        api_url = "http://127.0.0.1:1"

        def token(self, user: str, **claims: Any) -> str:
            return f"signed:{user}:{sorted(claims)}"

    local = Stage.on_local(Signer())  # type: ignore[arg-type]
    assert local.user("alice", name="Alice", ttl_seconds=-60) == stage_module.StageUser(
        "alice", "signed:alice:['name', 'ttl_seconds']"
    )
    assert local.kb_name("资料") == "资料"


@pytest.mark.parametrize(
    ("handle", "claims", "refused"),
    [
        ("expired-1", {"ttl_seconds": -60}, "only the local stack's signer"),
        ("foreign-1", {"audience": "other"}, "only the local stack's signer"),
        ("张 三-1", {}, "ASCII letters"),
        ("a/b-1", {}, "ASCII letters"),
    ],
)
def test_what_only_the_local_signer_makes_is_refused_on_a_deployed_stage(
    tmp_path: Path, handle: str, claims: dict[str, Any], refused: str
) -> None:
    given, log = command(tmp_path)
    stage = Stage.deployed("https://api.example.test", given, run_id="run1")
    with pytest.raises(ValueError, match=refused):
        stage.user(handle, **claims)
    assert not log.exists()  # nobody was made


@pytest.mark.parametrize(
    ("script", "said"),
    [
        (
            "import sys; print('eyJ.secret.sig'); sys.stderr.write('no such pool'); sys.exit(3)",
            "exited with 3",
        ),
        ("print('Please sign in first')", "printed no login token"),
        ("print('a.b')", "(not a JWT"),
    ],
)
def test_a_failing_or_silent_command_is_named_without_what_it_printed(
    tmp_path: Path, script: str, said: str
) -> None:
    given, _ = command(tmp_path, script=script)
    stage = Stage.deployed("https://api.example.test", given, run_id="run1")
    with pytest.raises(RuntimeError, match=r"MEMMY_KB_E2E_TOKEN_COMMAND") as raised:
        stage.user("owner-1")
    assert said in str(raised.value)
    assert "memmy-e2e-run1-owner-1" in str(raised.value)
    assert "secret" not in str(raised.value)  # stdout, where a token would be, is never repeated
    if "exited" in said:
        assert "no such pool" in str(raised.value)


def test_a_token_about_to_expire_is_asked_for_again_and_a_fresh_one_is_kept(tmp_path: Path) -> None:
    given, log = command(tmp_path, lifetime=60)  # under the five-minute margin
    stage = Stage.deployed("https://api.example.test", given, run_id="run1")
    first = stage.user("owner-1", name="Owner")
    name = "memmy-e2e-run1-owner-1"

    again = stage.token_for(name)

    assert token_claims(again)["exp"] >= token_claims(first.token)["exp"]
    assert runs(log) == [[name, "--name", "Owner"], [name, "--name", "Owner"]]  # the same person, asked again


def test_a_token_with_time_left_is_kept(tmp_path: Path) -> None:
    given, log = command(tmp_path, lifetime=3600)
    stage = Stage.deployed("https://api.example.test", given, run_id="run1")
    token = stage.user("owner-1").token

    assert stage.token_for("memmy-e2e-run1-owner-1") == token
    assert len(runs(log)) == 1


def test_the_url_without_its_token_command_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(stage_module.URL_ENV, raising=False)
    monkeypatch.delenv(stage_module.TOKEN_COMMAND_ENV, raising=False)
    assert stage_settings() is None
    monkeypatch.setenv(stage_module.URL_ENV, "https://api.example.test")
    with pytest.raises(pytest.UsageError, match="MEMMY_KB_E2E_TOKEN_COMMAND is not"):
        stage_settings()
    monkeypatch.setenv(stage_module.TOKEN_COMMAND_ENV, "print-token --pool x")
    assert stage_settings() == ("https://api.example.test", "print-token --pool x")


def test_the_run_id_is_the_operators_else_the_one_xdist_shares_else_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = SimpleNamespace(workerinput={"testrunuid": "0123456789abcdef"})
    monkeypatch.setenv(stage_module.RUN_ENV, "nightly7")
    assert run_id(config) == "nightly7"  # type: ignore[arg-type]
    monkeypatch.delenv(stage_module.RUN_ENV)
    assert run_id(config) == "01234567"  # type: ignore[arg-type]
    fresh = {run_id(object()) for _ in range(3)}  # type: ignore[arg-type]
    assert len(fresh) == 3
    assert all(len(one) == 8 for one in fresh)


class Item:
    """What ``mark_local_only`` reads of a collected test."""

    def __init__(self, path: Path, *, fixtures: tuple[str, ...] = (), marker: Any = None) -> None:
        self.path, self.fixturenames, self.nodeid = path, fixtures, f"{path.name}::test"
        self.marker = marker
        self.added: list[Any] = []

    def get_closest_marker(self, name: str) -> Any:
        return self.marker if name == "local_stack" else None

    def add_marker(self, marker: Any) -> None:
        self.added.append(marker)


def test_marked_tests_are_skipped_with_their_reason_on_a_deployed_stage_only(tmp_path: Path) -> None:
    e2e = tmp_path / "e2e"
    marked = Item(
        e2e / "test_a.py", fixtures=("local_stack",), marker=pytest.mark.local_stack("MemOS faults").mark
    )
    anywhere = Item(e2e / "test_b.py", fixtures=("stage",))
    elsewhere = Item(tmp_path / "agents" / "test_c.py", fixtures=("local_stack",))  # another tier: not ours

    mark_local_only([marked, anywhere, elsewhere], under=e2e, deployed=False)  # type: ignore[list-item]
    assert (marked.added, anywhere.added, elsewhere.added) == ([], [], [])

    mark_local_only([marked, anywhere, elsewhere], under=e2e, deployed=True)  # type: ignore[list-item]
    (skip,) = marked.added
    assert skip.name == "skip"
    assert skip.kwargs["reason"] == "local stack only (MEMMY_KB_E2E_URL is set): MemOS faults"
    assert (anywhere.added, elsewhere.added) == ([], [])


@pytest.mark.parametrize(
    ("item", "refusal"),
    [
        (Item(Path("/r/e2e/test_a.py"), fixtures=("local_stack",)), "uses the local_stack fixture"),
        (Item(Path("/r/e2e/test_a.py"), marker=pytest.mark.local_stack.mark), "needs its reason"),
        (Item(Path("/r/e2e/test_a.py"), marker=pytest.mark.local_stack(" ").mark), "needs its reason"),
    ],
    ids=["fixture-unmarked", "no-reason", "blank-reason"],
)
def test_the_local_stack_without_a_marker_or_a_marker_without_a_reason_is_refused(
    item: Item, refusal: str
) -> None:
    for deployed in (False, True):
        with pytest.raises(pytest.UsageError, match=refusal):
            mark_local_only([item], under=Path("/r/e2e"), deployed=deployed)  # type: ignore[list-item]


def test_the_tokens_claims_are_read_without_a_key() -> None:
    token = jwt.encode({"sub": "u1", "exp": int(time.time()) + 60}, "k" * 32, "HS256")
    assert token_claims(token)["sub"] == "u1"
    for bad in ("", "a.b", "a.b.c.d", jwt.encode({"exp": 1}, "k" * 32, "HS256")):
        with pytest.raises(ValueError, match=r"not a JWT|has no sub"):
            token_claims(bad)
