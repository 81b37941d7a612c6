"""The name a file goes to MemOS under: the user's filename with the upload's id in it.

MemOS cannot list what an add stored under our ids, only a KB's files with their names, so the name is
how the reconciler finds out whether an add whose reply never came did store the file
(``memmy_kb.domain.reconcile.repair``). The id sits in brackets before the extension (``report [up_…].pdf``),
where MemOS keeps the extension it uses to pick a parser; ``shown_name`` takes it out again wherever a
MemOS name or a title derived from it is shown to a person or an agent.
"""

from __future__ import annotations

import re
from typing import Final

_MARKER: Final = re.compile(r" ?\[(up_[0-9a-f]{1,64})\]")


def memos_file_name(filename: str, upload_id: str) -> str:
    """``filename`` with ``[<upload_id>]`` before its extension."""
    stem, dot, extension = filename.rpartition(".")
    if not dot or not stem:
        return f"{filename} [{upload_id}]"
    return f"{stem} [{upload_id}].{extension}"


def upload_id_in(name: str | None) -> str | None:
    """The upload id a MemOS file name carries, if any."""
    match = _MARKER.search(name or "")
    return match.group(1) if match else None


def shown_name(name: str) -> str:
    """A MemOS file name or excerpt title without the upload id it carries."""
    return _MARKER.sub("", name)
