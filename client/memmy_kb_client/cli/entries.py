"""A file or folder named on the command line by its id, by its name when no other has it, or by its path
of names (``产品/手册.pdf``): what ``files rm|mv|replace`` and ``folders rm|mv|rename`` act on (and the
folder of ``files ls|upload`` and ``folders mk``), and its name to say what they did; a knowledge base by
its id or unique name (``kb_id``, ``kb_named``: every command that takes a KB). An unknown name, or one
several share, is refused in words with the candidates; the command never guesses."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memmy_kb_client.cli.terminal import one_line, table

if TYPE_CHECKING:
    from memmy_kb_client.replies import KnowledgeBase
    from memmy_kb_client.sdk import MemmyClient

# At most this many listings (one per folder, breadth first from the root) are read to find a name.
MAX_LISTINGS = 200
# At most this many candidates are listed for a name several entries share.
MAX_CANDIDATES = 10

_NOUNS = {"files": ("file", "files"), "folders": ("folder", "folders")}


class NotResolved(Exception):
    """The name matches no entry, or several: the message says which, and what to give instead."""


@dataclass(frozen=True)
class Entry:
    """A file or folder; ``name`` None when the service could not say just then (the id is used as given)."""

    kind: str  # "files" or "folders"
    id: str
    name: str | None = None
    path: str = ""  # its path of names from the root

    @property
    def label(self) -> str:
        """``file '手册.pdf'``, or ``file ID`` when the name is not known."""
        noun = _NOUNS[self.kind][0]
        return f"{noun} '{one_line(self.name)}'" if self.name is not None else f"{noun} {self.id}"


def count(n: int, kind: str) -> str:
    """``1 file``, ``2 files``."""
    singular, plural = _NOUNS[kind]
    return f"{n} {singular if n == 1 else plural}"


def _same(a: str, b: str) -> bool:
    return unicodedata.normalize("NFC", a) == unicodedata.normalize("NFC", b)


def resolve(client: MemmyClient, kb_id: str, kind: str, given: str) -> Entry:
    """The file or folder (``kind`` "files" or "folders") of ``kb_id`` that ``given`` names: the one with
    that id, else the one with that name or path. ``NotResolved`` when none has it, or several do.

    A file id is read directly (one request); otherwise the KB's folders are listed breadth first, at
    most ``MAX_LISTINGS`` of them, stopping at the id. When the listings are cut short (too many
    folders, or the service failing just then: 5xx) and nothing matched, ``given`` is taken as an id and
    the action itself says whether it exists. A 4xx (no such KB, not logged in) is raised: the action
    would be refused the same way.
    """
    from memmy_kb_client.sdk import MemmyApiError

    if kind == "files":
        try:
            found = client.get_file(kb_id, given)
            return Entry(kind, str(found["id"]), str(found["name"]))
        except MemmyApiError as err:
            if err.status >= 500:
                return Entry(kind, given)
            if err.code == "kb_not_found" or err.status != 404:
                raise
    matches, complete = _walk(client, kb_id, kind, given)
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise NotResolved(_ambiguous(kind, given, kb_id, matches))
    if not complete:
        return Entry(kind, given)
    raise NotResolved(unknown(kind, given, kb_id))


def _walk(client: MemmyClient, kb_id: str, kind: str, given: str) -> tuple[list[Entry], bool]:
    """The entries named ``given`` (or the one with that id, alone), and whether every folder was read."""
    from memmy_kb_client.sdk import MemmyApiError

    matches: list[Entry] = []
    pending: list[tuple[str | None, str]] = [(None, "")]
    for _ in range(MAX_LISTINGS):
        if not pending:
            return matches, True
        folder_id, path = pending.pop(0)
        try:
            listing = client.list_files(kb_id, folder_id)
        except MemmyApiError as err:
            if err.status < 500:
                raise
            return matches, False
        found = listing.get("files") if kind == "files" else listing.get("folders")
        for item in found or []:
            name = str(item.get("name", ""))
            entry = Entry(kind, str(item["id"]), name, f"{path}/{name}" if path else name)
            if entry.id == given:
                return [entry], True
            if _same(name, given) or _same(entry.path, given):
                matches.append(entry)
        for folder in listing.get("folders") or []:
            name = str(folder.get("name", ""))
            pending.append((str(folder["id"]), f"{path}/{name}" if path else name))
    return matches, not pending


def unknown(kind: str, given: str, kb_id: str) -> str:
    """The sentence for a name (or id) no entry of the KB has."""
    noun = _NOUNS[kind][0]
    return (
        f"no {noun} with the id or name '{one_line(given)}' in knowledge base {kb_id}: give the {noun}'s id, "
        f"or its name if no other {noun} has it (`memmy-kb files ls {kb_id}` lists them)"
    )


def _ambiguous(kind: str, given: str, kb_id: str, matches: list[Entry]) -> str:
    noun = _NOUNS[kind][0]
    shown = table([entry.id, entry.path] for entry in matches[:MAX_CANDIDATES])
    more = len(matches) - MAX_CANDIDATES
    if more > 0:
        shown.append(f"… and {count(more, kind)} more")
    heading = (
        f"{count(len(matches), kind)} in knowledge base {kb_id} are named '{one_line(given)}': "
        f"give the id (or the path) of the {noun} you mean:"
    )
    return "\n".join([heading, *(f"  {line}" for line in shown)])


# How a command takes its KB (``entries.kb_named``): by id or unique name among one's own (what only
# an owner may do), among all one sees (reading, recall, leaving), or not at all (None).
OWN, ANY = "own", "any"
KB_HELP = {
    OWN: "one of your own knowledge bases: its id, or its name if no other of yours has it",
    ANY: "the knowledge base: its id, or its name if no other you see has it",
}

# Why a name of a KB shared with you does not do for a command that acts on one of your own.
SYNC_TARGET = "a sync target must be one of your own"
OWNER_ONLY = "only its owner may do this"


def kb_named(client: MemmyClient, given: str, *, owned: bool = False, why: str = OWNER_ONLY) -> str:
    """The id of the knowledge base ``given`` names, read from the client's KB listing (``kb_id``). When
    the service cannot list them just then (5xx), ``given`` is taken as an id: the action says whether it
    exists. A 4xx (not logged in) is raised: the action would be refused the same way."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        kbs = client.list_knowledge_bases()
    except MemmyApiError as err:
        if err.status < 500:
            raise
        return given
    return kb_id(kbs, given, owned=owned, why=why)


def kb_id(kbs: list[KnowledgeBase], given: str, *, owned: bool = False, why: str = SYNC_TARGET) -> str:
    """The id of the knowledge base ``given`` names among ``kbs`` (the listing ``kb ls`` shows): the one
    with that id, else the one with that name; with ``owned`` only one's own answer to a name (a sync
    target, or what only an owner may change; ``why`` says so when only a shared KB has the name). An id
    is passed on as given, owned or not: the action says whether it may. ``NotResolved`` when no KB has
    that id or name, or several share the name."""
    if any(str(kb.get("id")) == given for kb in kbs):
        return given
    named = [kb for kb in kbs if _same(str(kb.get("name", "")), given)]
    matches = [kb for kb in named if not owned or kb.get("role") == "owner"]
    if len(matches) == 1:
        return str(matches[0]["id"])
    own = "of your own " if owned else ""
    if not matches:
        shared = f" (one shared with you has it: {why})" if named else ""
        raise NotResolved(
            f"no knowledge base {own}with the id or name '{one_line(given)}'{shared}: give its id, or its "
            f"name if no other {own}has it (`memmy-kb kb ls` lists them)"
        )
    shown = table([str(kb["id"]), one_line(str(kb.get("name", "")))] for kb in matches[:MAX_CANDIDATES])
    heading = (
        f"{len(matches)} knowledge bases {own}are named '{one_line(given)}': give the id of the one you mean:"
    )
    lines = [heading, *(f"  {line}" for line in shown)]
    if len(matches) > MAX_CANDIDATES:
        lines.append(f"  … and {len(matches) - MAX_CANDIDATES} more")
    raise NotResolved("\n".join(lines))
