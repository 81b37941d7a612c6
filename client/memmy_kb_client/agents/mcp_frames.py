"""The frame filter in front of the MCP SDK's stdio transport: every line an agent writes to
``memmy-kb mcp`` is answered here with a JSON-RPC error, or passed on as a frame the SDK reads. Why (the
SDK drops some lines unanswered) and the answer to each kind of line: docs/desktop.md, "Every frame is
answered"."""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, BinaryIO, Final

MAX_FRAME_BYTES: Final = 1 << 20
MAX_DEPTH: Final = 64
MAX_ID: Final = 2**53 - 1
MAX_INTEGER_DIGITS: Final = 100
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
_SKIP_CHUNK: Final = 1 << 16  # the rest of an oversized line is read and dropped this much at a time
_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")  # json.loads has already joined every pair

logger = logging.getLogger("memmy_kb_client.mcp")


class FrameRefused(Exception):
    """A line that gets a JSON-RPC error instead of reaching the SDK."""

    def __init__(self, code: int, message: str, request_id: str | int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id
        self.answered = True  # False for a response: dropped, never answered

    def response(self) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": self.request_id,
            "error": {"code": self.code, "message": self.message},
        }


class _OutOfRange:
    """A number parsed from the frame that no JSON reader is sure to read as written."""


_OUT_OF_RANGE: Final = _OutOfRange()


class TooDeep(ValueError):
    """JSON nested more than ``MAX_DEPTH`` arrays and objects deep."""


def _integer(text: str) -> int | _OutOfRange:
    return int(text) if len(text.lstrip("-")) <= MAX_INTEGER_DIGITS else _OUT_OF_RANGE


def _float(text: str) -> float | _OutOfRange:
    value = float(text)
    return value if math.isfinite(value) else _OUT_OF_RANGE


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _usable_id(value: Any) -> bool:
    """An id the answer can carry back as the client sent it."""
    if isinstance(value, str):
        return _LONE_SURROGATE.search(value) is None
    return isinstance(value, int) and not isinstance(value, bool) and -MAX_ID <= value <= MAX_ID


def replace_lone_surrogates(value: Any, depth: int = 0) -> Any:
    """Parsed JSON ``value`` with lone surrogates (which no UTF-8 encoder writes, so no answer could
    carry them) replaced by U+FFFD, in keys and values; ``TooDeep`` past ``MAX_DEPTH`` levels, whatever
    the parser took, and ``ValueError`` for a number this module's parser found out of range."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict | list):
        if depth >= MAX_DEPTH:
            raise TooDeep
        if isinstance(value, dict):
            return {
                replace_lone_surrogates(key): replace_lone_surrogates(item, depth + 1)
                for key, item in value.items()
            }
        return [replace_lone_surrogates(item, depth + 1) for item in value]
    if value is _OUT_OF_RANGE:
        raise ValueError("number out of range")
    return value


def check_frame(line: bytes, accept: Callable[[str], bool] = lambda _: True) -> str | None:
    """The frame to hand the SDK for ``line`` (one line, re-serialised), None for a blank line;
    ``FrameRefused`` with the answer for every line the SDK would drop. ``accept`` is the SDK's parser."""
    text = line.decode("utf-8", "replace")
    if not text.strip():
        return None
    try:
        parsed = json.loads(text, parse_int=_integer, parse_float=_float, parse_constant=_not_json)
    except RecursionError:
        raise FrameRefused(INVALID_REQUEST, f"The frame nests more than {MAX_DEPTH} levels deep.") from None
    except ValueError:
        raise FrameRefused(PARSE_ERROR, "Parse error: the line is not a JSON text.") from None
    if isinstance(parsed, list):
        raise FrameRefused(INVALID_REQUEST, "Batches are not supported: send one JSON-RPC message per line.")
    if not isinstance(parsed, dict):
        raise FrameRefused(INVALID_REQUEST, "Invalid request: a frame is one JSON-RPC object.")
    try:
        return _checked_object(parsed, accept)
    except FrameRefused as refused:
        refused.answered = "method" in parsed or not ("result" in parsed or "error" in parsed)
        raise


def _checked_object(parsed: dict[str, Any], accept: Callable[[str], bool]) -> str:
    """``check_frame`` for a line that is one JSON object."""
    if "id" in parsed and not _usable_id(parsed["id"]):
        raise FrameRefused(
            INVALID_REQUEST,
            f"Invalid request: the id must be a string or an integer from -{MAX_ID} to {MAX_ID}.",
        )
    request_id = parsed.get("id")
    try:
        frame = json.dumps(replace_lone_surrogates(parsed), ensure_ascii=False, separators=(",", ":"))
    except TooDeep:
        raise FrameRefused(
            INVALID_REQUEST, f"The frame nests more than {MAX_DEPTH} levels deep.", request_id
        ) from None
    except ValueError:
        raise FrameRefused(
            INVALID_REQUEST,
            f"Invalid request: a number is out of range (integers of at most {MAX_INTEGER_DIGITS} "
            "digits, finite floats).",
            request_id,
        ) from None
    if not accept(frame):
        raise FrameRefused(
            INVALID_REQUEST,
            'Invalid request: not a JSON-RPC 2.0 message as MCP takes it ("jsonrpc": "2.0", a string '
            '"method", "params" an object; or a response with "result" or "error").',
            request_id,
        )
    return frame


async def read_frames(
    readline: Callable[[int], Awaitable[bytes]],
    answer: Callable[[dict[str, Any]], Awaitable[None]],
    accept: Callable[[str], bool] = lambda _: True,
) -> AsyncIterator[str]:
    """The frames that the SDK can read, one a line, of the lines ``readline(size)`` reads (at most
    ``size`` bytes of a line, as ``BufferedReader.readline``); every other line gets one error, sent with
    ``answer``. At most ``MAX_FRAME_BYTES`` of a line are held in memory."""
    while True:
        line = await readline(MAX_FRAME_BYTES + 1)
        if not line:
            return
        try:
            if len(line) > MAX_FRAME_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):
                    line = await readline(_SKIP_CHUNK)
                raise FrameRefused(INVALID_REQUEST, f"The frame is longer than {MAX_FRAME_BYTES:,} bytes.")
            frame = check_frame(line, accept)
        except FrameRefused as refused:
            if not refused.answered:
                logger.info("dropped a response: %s", refused.message)
                continue
            logger.info("refused a frame: %s %s", refused.code, refused.message)
            await answer(refused.response())
            continue
        if frame is not None:
            yield frame


@contextmanager
def claimed_stdin() -> Iterator[BinaryIO]:
    """Standard input to read frames from, through a private duplicate of descriptor 0, with 0 itself
    pointed at the null device while serving, as the SDK does for the stdin it reads itself: nothing
    else in the process, and no child, reads a frame before the filter."""
    wire = os.dup(0)  # not inheritable
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    try:
        # closefd=False: a reading thread may outlive the server; its descriptor is never reused under it.
        yield os.fdopen(wire, "rb", closefd=False)
    finally:
        os.dup2(wire, 0)
