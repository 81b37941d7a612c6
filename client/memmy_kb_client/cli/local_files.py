"""What ``files upload`` and ``files replace`` check of the local files before they ask the cloud anything:
each path is a readable regular file holding at least one byte; and a replace's new file is of the format
the knowledge base's file has (the file keeps its name, and the cloud checks the new bytes against it:
docs/uploads.md, "Replacing a file"). Each problem is one sentence; nothing is sent while there is one."""

from __future__ import annotations

import os
import stat
from pathlib import PurePath

from memmy_kb_client.cli.entries import NotResolved
from memmy_kb_client.cli.terminal import one_line

# Extensions that name the same format (the cloud checks and converts ``.htm`` as ``.html``).
_SAME_FORMAT = {"htm": "html"}


class LocalFileProblem(NotResolved):
    """A local file cannot be sent as given: the message says which and why, one sentence a line."""


def file_problem(path: str, *, replacing: bool = False) -> str | None:
    """Why ``path`` cannot be uploaded (``replacing``: be a file's next version), in a sentence; None for
    a readable regular file of at least one byte."""
    shown = one_line(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return f"there is no file {shown}: check the path (a typo, or a disk not mounted?)"
    except OSError as err:
        return f"{shown} cannot be read ({one_line(err.strerror or err)})"
    if stat.S_ISDIR(found.st_mode):
        if replacing:
            return f"{shown} is a folder: give the file whose content is the new version"
        return (
            f"{shown} is a folder: give the files in it, or keep the whole folder in the knowledge base "
            f"with `memmy-kb sync {shown} KB`"
        )
    if not stat.S_ISREG(found.st_mode):
        return f"{shown} is not a regular file (a pipe, a socket or a device): give a file"
    if not os.access(path, os.R_OK):
        return f"{shown} cannot be read (permission denied)"
    if found.st_size == 0:
        if replacing:
            return (
                f"{shown} is empty (0 bytes): a file's new version holds at least 1 byte "
                "(to remove the file, use `memmy-kb files rm`)"
            )
        return f"{shown} is empty (0 bytes): a knowledge base takes files of 1 byte to 100 MB"
    return None


def check_local_files(paths: list[str], *, replacing: bool = False) -> None:
    """``LocalFileProblem`` naming every path of ``paths`` that cannot be sent (``file_problem``)."""
    problems = [p for p in (file_problem(path, replacing=replacing) for path in paths) if p is not None]
    if problems:
        said = "nothing was sent" if replacing else "nothing was uploaded"
        raise LocalFileProblem("\n".join(f"{problem}; {said}" for problem in problems))


def file_format(name: str) -> str:
    """The format a name gives a file, as the cloud reads it (``memmy_kb.domain.formats.file_extension``):
    its extension in lower case (``htm`` as ``html``), or "" for a name without one (plain text)."""
    stem, dot, extension = PurePath(name).name.rpartition(".")
    extension = extension.lower() if dot and stem else ""
    return _SAME_FORMAT.get(extension, extension)


def _format_words(name: str) -> str:
    extension = PurePath(name).name.rpartition(".")[2].lower()
    return f"a .{extension} file" if file_format(name) else "a file without an extension (plain text)"


def check_replacement_format(path: str, kb_file_name: str | None, kb: str, file_label: str) -> None:
    """``LocalFileProblem`` when the new file at ``path`` is of another format than the knowledge base's
    file ``kb_file_name`` (None: the name is not known just then, and the cloud's checks decide)."""
    if kb_file_name is None or file_format(PurePath(path).name) == file_format(kb_file_name):
        return
    new = one_line(PurePath(path).name)
    raise LocalFileProblem(
        f"'{new}' is {_format_words(new)} and {file_label} is {_format_words(kb_file_name)}: a replace keeps "
        f"the file's name, and the cloud checks the new content as {_format_words(kb_file_name)}; nothing "
        f"was sent. To add '{new}' as a file of its own, run `memmy-kb files upload {one_line(kb)} "
        f"{one_line(path)}`"
    )
