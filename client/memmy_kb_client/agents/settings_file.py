"""An agent's settings file as ``hook_install`` and ``mcp_install`` read, lock and write it: UTF-8 only,
its byte-order mark and CRLF kept, edited under a lock of its directory, written atomically keeping its
mode (docs/desktop.md, "memmy-kb hook install")."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BOM = "\ufeff"


class SettingsError(Exception):
    """The settings file cannot be edited safely; the message says why and what to add by hand."""


@dataclass(frozen=True)
class TextForm:
    """What a file's text carries besides its content: a byte-order mark, CRLF line endings."""

    bom: bool = False
    crlf: bool = False

    @classmethod
    def of(cls, raw: str) -> TextForm:
        return cls(raw.startswith(BOM), "\r\n" in raw and raw.count("\n") == raw.count("\r\n"))

    def edited(self, raw: str) -> str:
        text = raw.removeprefix(BOM) if self.bom else raw
        return text.replace("\r\n", "\n") if self.crlf else text

    def written(self, text: str) -> str:
        raw = text.replace("\n", "\r\n") if self.crlf else text
        return BOM + raw if self.bom else raw


def followed(path: Path) -> Path:
    """Where ``path`` points when it is a symlink (dotfile managers): the file is edited where it lives,
    the link kept. A loop stays ``path``, which then fails to read with an error (ELOOP)."""
    if not path.is_symlink():
        return path
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a loop: RuntimeError before Python 3.13
        return path


def read_settings(path: Path) -> tuple[TextForm, str | None]:
    """The file's form and its text to edit (without a BOM, with ``\\n`` lines); None when absent."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return TextForm(), None
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SettingsError(
            f"{path} is not UTF-8 text (byte {err.start} cannot be read); it was left as it is"
        ) from err
    form = TextForm.of(raw)
    return form, form.edited(raw)


@contextmanager
def editing(path: Path, *, create: bool) -> Iterator[None]:
    """Hold ``path``'s directory locked (made first when ``create``) while the file is read and written."""
    if create:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # Windows
        fcntl = None  # type: ignore[assignment]
    fd = os.open(path.parent, os.O_RDONLY) if fcntl is not None and path.parent.is_dir() else None
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)


def write_settings(path: Path, text: str, form: TextForm | None = None) -> None:
    """``text`` (``\\n`` lines) into ``path`` in ``form``, atomically, the file's mode kept."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    # 0600 until it has the existing file's mode; a new file: 0666 less the umask, applied by the kernel.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is not None else 0o666)
    try:
        with open(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write((form or TextForm()).written(text))
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
