"""The MemOS emulator's extractors for plain text, Markdown (headings start sections), JSON (one line per
scalar, with its path) and XML (parsed with defusedxml: no entities, no external references)."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any
from xml.etree.ElementTree import Element

from .extraction import ExtractionError, Section, decode_utf8


def extract_txt(data: bytes) -> list[Section]:
    return [Section(None, decode_utf8(data))]


# A heading's text is its runs of non-blanks and of the blanks between them, each taken whole and never
# given back: a run of blanks ends the text when only "#"s and blanks follow it (the closing sequence).
# A lazy text tried the closing sequence after each character, re-reading a long run of blanks from each
# of its characters (2 s for a line of 16 KB of spaces) and keeping a backtracking entry per character.
_ATX_HEADING = re.compile(
    r"^ {0,3}(#{1,6})(?:[ \t]++((?:[^ \t]++|[ \t]++(?!#*+[ \t]*+$))*+))?(?:[ \t]++#++)?[ \t]*+$"
)
_SETEXT_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def extract_md(data: bytes) -> list[Section]:
    sections: list[Section] = []
    heading: str | None = None
    body: list[str] = []
    fence: str | None = None
    for line in decode_utf8(data).replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        fence_match = _FENCE.match(line)
        if fence is not None:
            if (
                fence_match
                and fence_match.group(1)[0] == fence[0]
                and len(fence_match.group(1)) >= len(fence)
            ):
                fence = None
            body.append(line)
            continue
        if fence_match:
            fence = fence_match.group(1)
            body.append(line)
            continue
        atx = _ATX_HEADING.match(line)
        if atx:
            sections.append(Section(heading, "\n".join(body)))
            heading, body = (atx.group(2) or "").strip() or None, []
        elif _is_setext_underline(line, body):
            title = body.pop().strip()
            sections.append(Section(heading, "\n".join(body)))
            heading, body = title, []
        else:
            body.append(line)
    sections.append(Section(heading, "\n".join(body)))
    return sections


def _is_setext_underline(line: str, body: list[str]) -> bool:
    """A setext underline directly below a one-line paragraph (a lone ``---`` stays a thematic break)."""
    if not _SETEXT_UNDERLINE.match(line) or not body or not body[-1].strip():
        return False
    previous = body[-1]
    if previous.startswith(("    ", "\t")) or re.match(r"^ {0,3}([-*+>]|\d+[.)])[ \t]", previous):
        return False
    return len(body) == 1 or not body[-2].strip()


# --- json -----------------------------------------------------------------------------------------


def extract_json(data: bytes) -> list[Section]:
    text = decode_utf8(data)
    try:
        value = json.loads(text)
    except ValueError:
        raise ExtractionError("not valid JSON") from None
    return [Section(None, "\n".join(_json_lines(value)))]


def _json_lines(root: Any) -> Iterator[str]:
    """``path.to.key: value`` lines in document order; iterative so deep nesting cannot overflow."""
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            children = [(f"{path}.{key}" if path else str(key), item) for key, item in value.items()]
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(reversed([(f"{path}[{index}]", item) for index, item in enumerate(value)]))
        elif value is not None:
            rendered = _json_scalar(value)
            yield f"{path}: {rendered}" if path else rendered


def _json_scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


# --- xml ------------------------------------------------------------------------------------------


def extract_xml(data: bytes) -> list[Section]:
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(_as_utf8_xml(data), forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise ExtractionError("XML with DOCTYPE/entities is not allowed") from None
    return [Section(None, "\n".join(_xml_texts(root)))]


_XML_ENCODING_DECL = re.compile(r"""^\ufeff?\s*<\?xml[^>]*?\bencoding\s*=\s*["']([A-Za-z][\w.:-]*)["']""")


def _as_utf8_xml(data: bytes) -> bytes:
    """Re-encode XML declared in a legacy encoding (GBK, Big5...) as UTF-8: expat rejects multi-byte ones."""
    head = data[:200].decode("latin-1")
    match = _XML_ENCODING_DECL.match(head)
    if not match:
        return data
    try:
        codec = codecs.lookup(match.group(1)).name
    except LookupError:
        return data  # let expat report the unknown encoding
    if codec in ("utf-8", "utf-8-sig"):
        return data
    text = data.decode(codec)  # a decode error surfaces as "not well-formed XML"
    start, end = match.span(1)
    return (text[:start] + "UTF-8" + text[end:]).encode("utf-8")


def _xml_texts(root: Element) -> Iterator[str]:
    """Element texts and tails in document order, whitespace collapsed; iterative for deep trees."""
    stack: list[Element | str] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            pieces = [item]
        else:
            pieces = [item.text or ""]
            # The tail follows the element's children, so it is pushed below them.
            stack.append(item.tail or "")
            stack.extend(reversed(list(item)))
        for piece in pieces:
            collapsed = " ".join(piece.split())
            if collapsed:
                yield collapsed
