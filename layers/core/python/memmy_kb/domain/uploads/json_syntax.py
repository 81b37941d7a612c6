"""An incremental JSON syntax check in bounded memory, for uploads of up to 100 MB."""

from __future__ import annotations

import re
from typing import Final

MAX_JSON_DEPTH: Final = 512
# A number or literal longer than this is not a document anyone uploads; refusing it bounds the buffer.
MAX_JSON_TOKEN_CHARS: Final = 1024 * 1024

# One token after optional whitespace: punctuation, the opening quote of a string, a number, a literal.
# The whitespace is possessive: no token starts with whitespace, so giving some back cannot help, and a
# piece that is all whitespace is refused at once instead of backtracking over every one of its
# characters (330 ns a character: 33 s for 100 MB of spaces).
_TOKEN = re.compile(
    r"[ \t\n\r]*+(?:([{}\[\]:,])|(\")|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)|(true|false|null))"
)
# The inside of a string up to (not including) its closing quote or the first character that is not
# allowed there; escapes must be complete. Possessive quantifiers: a string of a million escapes must
# not leave a million backtracking entries behind (tens of MB per chunk otherwise).
_STRING_BODY = re.compile(r'(?:[^"\\\x00-\x1f]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+')
_WHITESPACE = " \t\n\r"
# Grammar states: what may come next.
_VALUE, _ARRAY_FIRST, _ARRAY_NEXT, _OBJECT_FIRST, _OBJECT_KEY, _COLON, _OBJECT_NEXT, _END = range(8)


class JsonSyntaxChecker:
    """An incremental RFC 8259 syntax check: ``feed`` text in pieces, then ``close``.

    Raises ValueError at the first error. Keeps only the container stack (bounded by ``MAX_JSON_DEPTH``)
    and, between pieces, at most a token cut at the boundary: strings of any length are consumed as they
    stream, so a 100 MB document costs the same memory as a small one. Stricter than ``json.loads``: no
    NaN/Infinity (MemOS's parsers need not accept them); a leading byte-order mark is allowed.
    """

    def __init__(self) -> None:
        self._pending = ""
        self._stack: list[bool] = []  # True for an object, False for an array
        self._state = _VALUE
        self._in_string = False
        self._started = False

    def feed(self, text: str) -> None:
        if not self._started and text:
            self._started = True
            text = text.removeprefix("\ufeff")
        self._pending = self._scan(self._pending + text, final=False)

    def close(self) -> None:
        rest = self._scan(self._pending, final=True)
        if rest.strip(_WHITESPACE) or self._in_string or self._state != _END:
            raise ValueError("incomplete JSON document")

    def _scan(self, buf: str, *, final: bool) -> str:
        """Consume what can be decided in ``buf``; return the undecided tail (a cut token)."""
        pos, end = 0, len(buf)
        while pos < end:
            if self._in_string:
                pos = _STRING_BODY.match(buf, pos).end()  # type: ignore[union-attr]
                if pos == end:
                    return ""
                if buf[pos] == '"':
                    self._in_string = False
                    pos += 1
                    self._string_done()
                    continue
                if buf[pos] == "\\" and not final and end - pos < 6:
                    return buf[pos:]  # an escape cut in the middle
                raise ValueError("bad character or escape in a string")
            match = _TOKEN.match(buf, pos)
            if match is None:
                rest = buf[pos:].lstrip(_WHITESPACE)
                if not rest:
                    return ""
                if not final and len(rest) < 6:
                    return rest  # e.g. "tru" or "-" at the end of a piece
                raise ValueError("unexpected character")
            scalar = match.group(3) or match.group(4)
            if scalar and not final and match.end() >= end - 2:
                # A number or literal touching the end may continue in the next piece ("1" then "2.5").
                tail = buf[match.start(3) if match.group(3) else match.start(4) :]
                if len(tail) > MAX_JSON_TOKEN_CHARS:
                    raise ValueError("token too long")
                return tail
            pos = match.end()
            if match.group(1):
                self._punctuation(match.group(1))
            elif match.group(2):
                self._string_start()
            else:
                self._value()
        return ""

    def _value(self) -> None:
        if self._state not in (_VALUE, _ARRAY_FIRST):
            raise ValueError("unexpected value")
        self._after_value()

    def _after_value(self) -> None:
        if not self._stack:
            self._state = _END
        else:
            self._state = _OBJECT_NEXT if self._stack[-1] else _ARRAY_NEXT

    def _string_start(self) -> None:
        if self._state not in (_VALUE, _ARRAY_FIRST, _OBJECT_FIRST, _OBJECT_KEY):
            raise ValueError("unexpected string")
        self._in_string = True

    def _string_done(self) -> None:
        if self._state in (_OBJECT_FIRST, _OBJECT_KEY):
            self._state = _COLON
        else:
            self._after_value()

    def _punctuation(self, char: str) -> None:
        state = self._state
        if char in "[{":
            if state not in (_VALUE, _ARRAY_FIRST):
                raise ValueError("unexpected container")
            if len(self._stack) >= MAX_JSON_DEPTH:
                raise ValueError("nested too deeply")
            self._stack.append(char == "{")
            self._state = _OBJECT_FIRST if char == "{" else _ARRAY_FIRST
        elif char == "]":
            if state not in (_ARRAY_FIRST, _ARRAY_NEXT):
                raise ValueError("unexpected ]")
            self._stack.pop()
            self._after_value()
        elif char == "}":
            if state not in (_OBJECT_FIRST, _OBJECT_NEXT):
                raise ValueError("unexpected }")
            self._stack.pop()
            self._after_value()
        elif char == ":":
            if state != _COLON:
                raise ValueError("unexpected :")
            self._state = _VALUE
        elif state == _ARRAY_NEXT:  # ","
            self._state = _VALUE
        elif state == _OBJECT_NEXT:
            self._state = _OBJECT_KEY
        else:
            raise ValueError("unexpected ,")
