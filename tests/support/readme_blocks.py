"""The README's shell blocks as commands to run: found as CommonMark finds them, one command a line.

``extract(markdown, sections)`` returns the ```` ```sh ```` (``bash``, ``shell``) blocks under the named
headings (a heading's section runs to the next heading of its level or higher), in order, each with its
marker and its commands. A block the README test cannot run carries a marker, an HTML comment on the
line(s) just before its fence:

- ``<!-- readme-test: skip (why) -->``: not run; the reason is required (a browser, an agent, ...);
- ``<!-- readme-test: provided -->`` (a note in parentheses may follow): what the block starts, the test
  has started itself; only commands that start the local stack (``make run``, ``memmy-local up``) may be
  in such a block.

Every other block is run. A command is a line, with lines ending in ``\\`` joined to the next; blank lines
and comment lines are left out; here-documents are refused (``ReadmeError``), as are markers that are
malformed or stand before no block, a section that is missing, an unmarked block that starts the stack
(it would never return: mark it ``provided``) and a command that would reach past the stack's ports
(``on_stack_ports``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

SHELL_LANGUAGES = frozenset({"sh", "bash", "shell"})
MARKER_NAME = "readme-test"
MARKER = re.compile(r"^<!--\s*readme-test:\s*(skip|provided)\s*(?:\((.+)\))?\s*-->$", re.DOTALL)
# What starts the local stack in the foreground: a ``provided`` block's only commands.
STARTS_STACK = re.compile(r"^(?:make\s+run\b|(?:\S*/)?memmy-local\s+up\b)")
LOOPBACK_PORT = re.compile(r"\b(localhost|127\.0\.0\.1):(\d+)\b")
URL_HOST = re.compile(r"\bhttps?://([^/:\s\"']+)")
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1"})


class ReadmeError(ValueError):
    """The README cannot be run as written; the message names the line."""


@dataclass(frozen=True)
class Marker:
    kind: Literal["skip", "provided"]
    reason: str | None


@dataclass(frozen=True)
class Command:
    """One command: the README line it starts on (1-based) and its text as written."""

    line: int
    text: str


@dataclass(frozen=True)
class Block:
    """A shell block: its section's heading, the line of its opening fence, its marker, its commands."""

    section: str
    line: int
    marker: Marker | None
    commands: tuple[Command, ...]

    @property
    def runs(self) -> bool:
        return self.marker is None


def extract(markdown: str, sections: Sequence[str]) -> list[Block]:
    """The shell blocks of ``sections`` (heading texts), in the README's order."""
    tokens = MarkdownIt("commonmark").parse(markdown)
    found: set[str] = set()
    blocks: list[Block] = []
    current: str | None = None
    level = 0
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            heading_level = int(token.tag[1:])
            title = tokens[index + 1].content.strip()
            if title in sections:
                current, level = title, heading_level
                found.add(title)
            elif current is not None and heading_level <= level:
                current = None
        elif current is not None and token.type == "html_block" and MARKER_NAME in token.content:
            _marker(token)  # malformed markers are refused wherever they stand
            if index + 1 >= len(tokens) or tokens[index + 1].type != "fence":
                raise ReadmeError(f"line {_line(token)}: a {MARKER_NAME} marker stands before no code block")
        elif current is not None and token.type == "inline" and f"<!-- {MARKER_NAME}" in token.content:
            raise ReadmeError(
                f"line {_line(token)}: a {MARKER_NAME} marker stands on lines of its own, a blank line "
                "before it, just before the block's fence"
            )
        elif current is not None and token.type == "fence" and _language(token) in SHELL_LANGUAGES:
            previous = tokens[index - 1] if index else None
            marker = _marker(previous) if previous is not None and previous.type == "html_block" else None
            block = Block(current, _line(token), marker, tuple(_commands(token)))
            _check(block)
            blocks.append(block)
    if missing := [name for name in sections if name not in found]:
        raise ReadmeError(f"no section headed {missing} in the README")
    return blocks


def _line(token: Token) -> int:
    assert token.map is not None
    return token.map[0] + 1


def _language(token: Token) -> str:
    return token.info.split(maxsplit=1)[0] if token.info.strip() else ""


def _marker(token: Token) -> Marker | None:
    text = token.content.strip()
    if MARKER_NAME not in text:
        return None
    match = MARKER.match(text)
    if match is None:
        raise ReadmeError(
            f"line {_line(token)}: {text!r} is not <!-- {MARKER_NAME}: skip (why) --> "
            f"or <!-- {MARKER_NAME}: provided -->"
        )
    kind: Literal["skip", "provided"] = "skip" if match.group(1) == "skip" else "provided"
    reason = match.group(2).strip() if match.group(2) else None
    if kind == "skip" and not reason:
        raise ReadmeError(f"line {_line(token)}: a skip marker says why: <!-- {MARKER_NAME}: skip (why) -->")
    return Marker(kind, reason)


def _commands(fence: Token) -> list[Command]:
    """The fence's commands: continuation lines joined, blank and comment-only lines left out."""
    first = _line(fence) + 1
    commands: list[Command] = []
    pending: list[str] = []
    start = first
    for offset, raw in enumerate(fence.content.splitlines()):
        if not pending:
            start = first + offset
            if not raw.strip() or raw.lstrip().startswith("#"):
                continue
        pending.append(raw)
        if raw.endswith("\\"):
            continue
        commands.append(Command(start, "\n".join(pending)))
        pending = []
    if pending:
        raise ReadmeError(f"line {start}: the block ends inside a command (a trailing backslash)")
    for command in commands:
        if "<<" in command.text.replace("<<<", ""):
            raise ReadmeError(f"line {command.line}: here-documents are not run; write the input to a file")
    return commands


def _check(block: Block) -> None:
    starting = [c for c in block.commands if STARTS_STACK.match(c.text)]
    if block.marker is None and starting:
        raise ReadmeError(
            f"line {starting[0].line}: `{starting[0].text}` starts the stack and never returns; the test "
            f"starts its own: mark the block <!-- {MARKER_NAME}: provided -->"
        )
    others = [c for c in block.commands if not STARTS_STACK.match(c.text)]
    if block.marker is not None and block.marker.kind == "provided" and others:
        raise ReadmeError(
            f"line {others[0].line}: a provided block only starts the stack (make run, memmy-local up); "
            f"`{others[0].text}` is not that: move it to a block of its own"
        )


def on_stack_ports(command: Command, ports: Mapping[int, str]) -> str:
    """``command``'s text with each documented default port (``localhost:8080``, ``127.0.0.1:8090``) on
    the test stack's ``host:port`` (``ports`` maps a default port to it); ``ReadmeError`` when the command
    would still reach a host other than this machine, or a loopback port the stack does not serve."""
    served = set(ports.values())

    def moved(match: re.Match[str]) -> str:
        return ports.get(int(match.group(2)), match.group(0))

    text = LOOPBACK_PORT.sub(moved, command.text)
    for host in URL_HOST.findall(text):
        if host not in LOOPBACK_HOSTS:
            raise ReadmeError(f"line {command.line}: `{command.text}` would reach {host}, beyond 127.0.0.1")
    for match in LOOPBACK_PORT.finditer(text):
        if match.group(0) not in served:
            raise ReadmeError(
                f"line {command.line}: `{command.text}` names {match.group(0)}, a port the test stack "
                "does not serve"
            )
    return text
