"""The names ``files upload`` gives its files in the target folder: a name already there (a file, or an
upload still on its way) is refused before anything is sent, naming that file and the way to send a new
version of it (``files replace``); with ``--keep-both`` the new file takes the first free name of the form
``name (2).md``. Names are compared as the service compares them: NFC, without surrounding spaces."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from pathlib import PurePath
from typing import TYPE_CHECKING

from memmy_kb_client.cli.entries import NotResolved
from memmy_kb_client.cli.terminal import one_line

if TYPE_CHECKING:
    from memmy_kb_client.replies import FileListing

# The service's code for a name a sibling already has (409), when the listing read first missed it.
NAME_TAKEN = "name_taken"
# How many numbered names ``--keep-both`` tries before it gives up.
MAX_NUMBERED = 1000


class NameTaken(NotResolved):
    """The name is already in the folder: the message names the file there and what to do instead."""


def same_name_key(name: str) -> str:
    """The form two names are compared in: NFC, without the spaces around it."""
    return unicodedata.normalize("NFC", name).strip()


def names_in(listing: FileListing) -> dict[str, str]:
    """The names of a folder's listing (files, and uploads on their way; not failed uploads, which made
    no file), each with the id that says which it is."""
    taken: dict[str, str] = {}
    for entry in listing.get("files") or []:
        if entry.get("status") == "failed" and not entry.get("id"):
            continue
        taken[same_name_key(str(entry.get("name", "")))] = str(
            entry.get("id") or entry.get("upload_id") or ""
        )
    return taken


def free_name(name: str, taken: Iterable[str]) -> str:
    """``name`` when no name in ``taken`` (keys of ``names_in``) is the same, else ``stem (N).ext`` with
    the smallest N from 2 that is free."""
    used = set(taken)
    if same_name_key(name) not in used:
        return name
    path = PurePath(name)
    stem, suffix = (path.stem, path.suffix) if path.stem else (name, "")
    for number in range(2, MAX_NUMBERED + 2):
        candidate = f"{stem} ({number}){suffix}"
        if same_name_key(candidate) not in used:
            return candidate
    raise NameTaken(
        f"no free name like '{one_line(name)}' in the folder: rename the file before uploading it"
    )


def taken_sentence(name: str, existing_id: str, kb: str, where: str) -> str:
    """What ``files upload`` says of a name already in the folder."""
    which = f" (file {existing_id})" if existing_id else ""
    target = existing_id or one_line(name)
    return (
        f"'{one_line(name)}' is already in {where} of knowledge base {one_line(kb)}{which}: nothing was "
        f"uploaded. To send a new version of it, run `memmy-kb files replace {one_line(kb)} {target} PATH`; "
        "to keep both, add --keep-both (the new one gets a free name such as "
        f"'{one_line(free_name(name, [same_name_key(name)]))}')"
    )


def names_to_send(
    names: list[str], taken: dict[str, str], *, keep_both: bool, kb: str, where: str
) -> list[str]:
    """The name each file is uploaded under, in order: its own, or with ``keep_both`` a free one (also
    free of the names given earlier in the same command). ``NameTaken`` for the names already there,
    all of them in its message, when not ``keep_both``."""
    chosen: list[str] = []
    used = dict(taken)
    refused: list[str] = []
    for name in names:
        key = same_name_key(name)
        if key in used and not keep_both:
            refused.append(
                taken_sentence(name, used[key], kb, where)
                if key in taken
                else f"'{one_line(name)}' is given twice: only one file of a name can be in {where}; add "
                "--keep-both to upload the second under a free name"
            )
            continue
        picked = free_name(name, used) if keep_both else name
        used[same_name_key(picked)] = ""
        chosen.append(picked)
    if refused:
        raise NameTaken("\n".join(refused))
    return chosen
