"""Running the README's commands as a person pastes them: in order, in one shell, on a terminal.

``run_in_one_shell(steps, ...)`` writes one bash script of every step and runs it, so that what one
command sets (``KB=$(...)``) the next one reads. Each command's output goes to a file of its own, and the
first command to exit non-zero stops the script: ``Failure`` names its README line, its block, its exit
code and what it printed. Standard input is a terminal (a pty) on which every question is answered yes,
as a person at the keyboard would answer ``rm``'s; ``curl`` fails on an HTTP error (``--fail-with-body``),
so a refused request fails its line too. A run longer than ``timeout`` seconds is stopped (its process
group killed) and names the command it was in.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import termios
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.readme_blocks import Block, Command

OUTPUT_TAIL_CHARS = 4000
ANSWER = b"y\n"
PREAMBLE = """set -o pipefail
curl() { command curl --fail-with-body "$@"; }
"""


@dataclass(frozen=True)
class Step:
    """One command to run: where it is in the README, and its text as run (the stack's ports in it)."""

    block: Block
    command: Command
    text: str

    def where(self) -> str:
        return f"README.md line {self.command.line} (the block at line {self.block.line}, {self.block.section!r})"


@dataclass(frozen=True)
class Failure:
    """The step that failed: its exit code (None when the run timed out in it) and what it printed."""

    step: Step | None
    exit_code: int | None
    output: str

    def describe(self) -> str:
        if self.step is None:
            return f"the shell itself exited {self.exit_code}:\n{self.output}"
        what = "did not finish in time" if self.exit_code is None else f"exited {self.exit_code}"
        return f"{self.step.where()}: `{self.step.command.text}` {what}; it printed:\n{self.output}"


def script_for(steps: Sequence[Step], state_dir: Path) -> str:
    """The bash script: each step in a group whose output goes to ``<i>.out``; the first to fail writes
    its exit code to ``<i>.status`` and ends the script; ``current`` holds the step under way."""
    state = shlex.quote(str(state_dir))
    parts = [PREAMBLE]
    for index, step in enumerate(steps):
        parts.append(
            f"# {step.where()}\n"
            f"printf '%s\\n' {index} >{state}/current\n"
            f"{{\n{step.text}\n}} >{state}/{index}.out 2>&1\n"
            f"readme_status=$?\n"
            f'if [ "$readme_status" -ne 0 ]; then printf "%s\\n" "$readme_status" >{state}/{index}.status; '
            "exit 0; fi\n"
        )
    parts.append(f"printf 'done\\n' >{state}/current\n")
    return "\n".join(parts)


def run_in_one_shell(
    steps: Sequence[Step], *, cwd: Path, env: Mapping[str, str], state_dir: Path, timeout: float
) -> Failure | None:
    """Run ``steps`` in one bash in ``cwd`` with exactly ``env``; the first failure, or None."""
    state_dir.mkdir(parents=True, exist_ok=True)
    script = state_dir / "readme.sh"
    script.write_text(script_for(steps, state_dir), encoding="utf-8")
    shell_log = state_dir / "shell.log"
    terminal, keyboard = _answering_terminal(len(steps))
    try:
        with shell_log.open("wb") as log:
            process = subprocess.Popen(  # noqa: S603 - the README's own commands, as a reader runs them
                ["bash", str(script)],  # noqa: S607 - bash from PATH, as a reader's shell
                cwd=cwd,
                env=dict(env),
                stdin=terminal,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        os.close(terminal)
        terminal = -1
        timed_out = _wait(process, timeout)
    finally:
        if terminal >= 0:
            os.close(terminal)
        os.close(keyboard)
    return _outcome(steps, state_dir, process.returncode, timed_out, shell_log)


def _answering_terminal(questions: int) -> tuple[int, int]:
    """A pty (its terminal end, for stdin, and its keyboard end) with ``questions`` answers typed ahead;
    no echo, so nothing waits for the typed-ahead lines to be read back."""
    keyboard, terminal = os.openpty()
    attributes = termios.tcgetattr(terminal)
    attributes[3] &= ~termios.ECHO
    termios.tcsetattr(terminal, termios.TCSANOW, attributes)
    os.write(keyboard, ANSWER * questions)
    return terminal, keyboard


def _wait(process: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for the shell; past ``timeout`` kill its whole process group. Whether it timed out."""
    try:
        process.wait(timeout=timeout)
        return False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return True
    finally:
        _kill_leftovers(process)


def _kill_leftovers(process: subprocess.Popen[bytes]) -> None:
    """Whatever a command left running in the background of the shell's session goes with it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _outcome(
    steps: Sequence[Step], state_dir: Path, exit_code: int, timed_out: bool, shell_log: Path
) -> Failure | None:
    current = (state_dir / "current").read_text().strip() if (state_dir / "current").exists() else ""
    if current == "done" and not timed_out:
        return None
    if not current.isdigit():
        return Failure(None, exit_code, _tail(shell_log))
    index = int(current)
    output = _tail(state_dir / f"{index}.out")
    if timed_out:
        return Failure(steps[index], None, output)
    status = state_dir / f"{index}.status"
    code = int(status.read_text()) if status.exists() else exit_code
    return Failure(steps[index], code, output or _tail(shell_log))


def _tail(path: Path) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return text[-OUTPUT_TAIL_CHARS:]
