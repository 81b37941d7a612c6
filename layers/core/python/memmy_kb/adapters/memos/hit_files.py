"""The MemOS file ids a search hit names, when it names any (docs/memos.md, "A hit's file").

MemOS documents no file id in a search hit. These are the shapes we read, should one appear: each is an
assumption, read defensively, and pinned by ``tests/unit/adapters/test_memos_hit_files.py``. In the hit
itself and in its ``metadata`` object (where MemOS's open-source server keeps ``file_ids``):

* ``file_id``: a string;
* ``file_ids``: a list of strings;
* ``source`` and ``sources``: an object, or a list of objects, each giving its ``file_id``, or else its
  ``id``, or else its ``file_info`` object's ``file_id`` or ``id``.

Only strings of 1 to ``MAX_ID_CHARS`` printable characters without whitespace count; anything else (a
number, a ``source`` that is a word such as ``"file"``, a nested list) is ignored. A hit naming more than
``MAX_HIT_FILE_IDS`` distinct ids names none: its file is then told from its text, as for a hit without
ids. An id names a file only when recall finds it among the files of the KBs the hit's search covered, so
an id read wrongly names nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final, TypeGuard

MAX_HIT_FILE_IDS: Final = 4
MAX_ID_CHARS: Final = 128
_KEYS: Final = ("file_id", "id")


def hit_file_ids(item: Mapping[str, object]) -> tuple[str, ...]:
    """The distinct MemOS file ids ``item`` (one entry of ``memory_detail_list``) names, in order; () when
    it names none, or more than ``MAX_HIT_FILE_IDS``."""
    found = list(dict.fromkeys(_ids(item)))
    metadata = item.get("metadata")
    if isinstance(metadata, Mapping):
        found = list(dict.fromkeys([*found, *_ids(metadata)]))
    return tuple(found) if len(found) <= MAX_HIT_FILE_IDS else ()


def _ids(holder: Mapping[str, object]) -> Iterator[str]:
    candidates: list[object] = [holder.get("file_id")]
    file_ids = holder.get("file_ids")
    if isinstance(file_ids, list):
        candidates += file_ids
    for key in ("source", "sources"):
        value = holder.get(key)
        candidates += [_source_id(s) for s in (value if isinstance(value, list) else [value]) if isinstance(s, Mapping)]
    yield from (value for value in candidates if _sane(value))


def _source_id(source: Mapping[str, object]) -> str | None:
    """A source object's file id: its ``file_id``, else its ``id``, else its ``file_info``'s (the same way)."""
    info = source.get("file_info")
    for holder in (source, info if isinstance(info, Mapping) else {}):
        for key in _KEYS:
            value = holder.get(key)
            if _sane(value):
                return value
    return None


def _sane(value: object) -> TypeGuard[str]:
    """A string of 1 to ``MAX_ID_CHARS`` printable characters without whitespace."""
    return isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS and value.isprintable() and not any(
        c.isspace() for c in value
    )
