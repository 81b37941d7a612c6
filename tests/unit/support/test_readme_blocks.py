"""The README test's two halves: finding the shell blocks and their markers (tests/support/readme_blocks.py)
and running commands in one shell on a terminal (tests/support/readme_shell.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.readme_blocks import Command, Marker, ReadmeError, extract, on_stack_ports
from tests.support.readme_shell import Step, run_in_one_shell

README = Path(__file__).resolve().parents[3] / "README.md"

SAMPLE = """# Title

## Quick start

<!-- readme-test: skip (needs a browser) -->
```sh
open http://localhost:8765
```

## Trying it locally

Text.

```sh
TOKEN=$(make-token alice)   # a comment
# a comment line

curl -s localhost:8080/me \\
  -H "Authorization: Bearer $TOKEN"
```

```text
not a shell block
```

<!-- readme-test: provided (the test starts it) -->
```bash
make run ARGS="--port 0"
```

### A subsection

```shell
echo still in the section
```

## Elsewhere

```sh
echo not extracted
```
"""


def _sample(replace: str = "", by: str = "") -> str:
    return SAMPLE.replace(replace, by) if replace else SAMPLE


def test_the_shell_blocks_of_the_sections_in_order_with_their_markers_and_lines() -> None:
    blocks = extract(SAMPLE, ["Quick start", "Trying it locally"])

    assert [(b.section, b.line, b.marker) for b in blocks] == [
        ("Quick start", 6, Marker("skip", "needs a browser")),
        ("Trying it locally", 14, None),
        ("Trying it locally", 27, Marker("provided", "the test starts it")),
        ("Trying it locally", 33, None),
    ]
    assert blocks[1].commands == (
        Command(15, "TOKEN=$(make-token alice)   # a comment"),
        Command(18, 'curl -s localhost:8080/me \\\n  -H "Authorization: Bearer $TOKEN"'),
    )
    assert [b.runs for b in blocks] == [False, True, False, True]


@pytest.mark.parametrize(
    ("replace", "by", "refusal"),
    [
        ("skip (needs a browser)", "skip", "says why"),
        ("skip (needs a browser)", "skipped (needs a browser)", "is not"),
        ("<!-- readme-test: provided (the test starts it) -->\n", "", "starts the stack"),
        ("make run ARGS", "echo hi\nmake run ARGS", "only starts the stack"),
        ("Text.", "Text.\n\n<!-- readme-test: skip (x) -->\n\nMore text.", "before no code block"),
        ("Text.", "Text <!-- readme-test: skip (x) --> inline.", "lines of its own"),
        ("curl -s", "cat <<EOF\nx\nEOF\ncurl -s", "here-documents"),
        ('"Authorization: Bearer $TOKEN"', '"Authorization: Bearer $TOKEN" \\', "trailing backslash"),
    ],
)
def test_a_readme_that_cannot_be_run_as_written_is_refused_naming_the_line(
    replace: str, by: str, refusal: str
) -> None:
    with pytest.raises(ReadmeError, match=refusal) as refused:
        extract(_sample(replace, by), ["Quick start", "Trying it locally"])
    assert "line" in str(refused.value)


def test_a_section_that_is_gone_is_refused() -> None:
    with pytest.raises(ReadmeError, match=r"no section headed \['Quick start'\]"):
        extract(_sample("## Quick start", "## Quick start, renamed"), ["Quick start", "Trying it locally"])


def test_the_documented_ports_become_the_test_stacks_and_nothing_else_is_reached() -> None:
    ports = {8080: "127.0.0.1:40001", 8090: "127.0.0.1:40002"}

    moved = on_stack_ports(Command(1, "curl localhost:8080/me && curl http://127.0.0.1:8090/x"), ports)

    assert moved == "curl 127.0.0.1:40001/me && curl http://127.0.0.1:40002/x"
    with pytest.raises(ReadmeError, match="does not serve"):
        on_stack_ports(Command(2, "memmy-kb login --endpoint http://127.0.0.1:8765"), ports)
    with pytest.raises(ReadmeError, match=r"beyond 127\.0\.0\.1"):
        on_stack_ports(Command(3, "curl -s https://example.com/x"), ports)


def test_the_readme_itself_parses_and_runs_some_blocks() -> None:
    blocks = extract(README.read_text(encoding="utf-8"), ["Quick start", "Trying it locally"])
    assert any(b.runs for b in blocks)


def _steps(*texts: str) -> list[Step]:
    (block,) = extract("## S\n\n```sh\n" + "\n".join(texts) + "\n```\n", ["S"])
    return [Step(block, command, command.text) for command in block.commands]


def _run(tmp_path: Path, *texts: str, timeout: float = 30) -> tuple[list[Step], object]:
    steps = _steps(*texts)
    failure = run_in_one_shell(
        steps, cwd=tmp_path, env=dict(os.environ), state_dir=tmp_path / "state", timeout=timeout
    )
    return steps, failure


def test_variables_carry_from_one_command_to_the_next_and_questions_are_answered_yes(tmp_path: Path) -> None:
    _, failure = _run(
        tmp_path,
        "NAME=$(echo carried)",
        'test -t 0 && read -r answer && test "$answer" = y',
        '[ "$NAME" = carried ] && echo "$NAME" > seen',
    )
    assert failure is None
    assert (tmp_path / "seen").read_text() == "carried\n"


def test_the_first_failing_command_is_named_with_its_exit_code_and_output(tmp_path: Path) -> None:
    steps, failure = _run(tmp_path, "echo one", "echo refused >&2; exit 3", "touch never")

    assert failure is not None
    assert (failure.step, failure.exit_code) == (steps[1], 3)
    assert "README.md line 5" in failure.describe()
    assert "refused" in failure.describe()
    assert not (tmp_path / "never").exists()


def test_a_failure_inside_a_pipe_or_a_substitution_fails_its_line(tmp_path: Path) -> None:
    steps, failure = _run(tmp_path, "X=$(false | cut -d' ' -f1)")
    assert failure is not None
    assert failure.step == steps[0]


def test_a_command_that_never_returns_is_stopped_and_named(tmp_path: Path) -> None:
    steps, failure = _run(tmp_path, "echo fine", "sleep 60", timeout=1)
    assert failure is not None
    assert (failure.step, failure.exit_code) == (steps[1], None)
    assert "did not finish in time" in failure.describe()
