"""Where the desktop side keeps its state (``desktop/`` for what the hooks read, ``desktop-private/`` for
the secrets without a keychain) and how its private files are written (docs/desktop.md, "Credentials").
The hook imports it before every turn, so it stays cheap to import."""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing stays unimported at run time; mypy reads this as True
if TYPE_CHECKING:
    from collections.abc import Mapping

HOME_ENV = "MEMMY_KB_HOME"
HOOK_TOKEN_FILE = "hook-token"  # noqa: S105 - a file name
CONTROL_FILE = "control.json"
# An older version's bare control token (in desktop/, then in desktop-private/): removed on start.
CONTROL_TOKEN_FILE = "control-token"  # noqa: S105 - a file name
SERVICE_FILE = "service.json"
LOGIN_FILE = "cloud-login.json"
LOCK_FILE = "serve.lock"
PRIVATE_DIR = "desktop-private"
HOOK_RUN_PREFIX = "hook-last-"
# Tokens are ``secrets.token_urlsafe`` output behind a short prefix: nothing else may reach a header.
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
MAX_TOKEN_CHARS = 200


def memmy_home(env: Mapping[str, str] = os.environ) -> str:
    """``$MEMMY_KB_HOME``, else ``~/.memmy-kb``."""
    return env.get(HOME_ENV) or os.path.join(os.path.expanduser("~"), ".memmy-kb")


def desktop_dir(env: Mapping[str, str] = os.environ) -> str:
    """The desktop side's state directory: ``$MEMMY_KB_HOME/desktop``."""
    return os.path.join(memmy_home(env), "desktop")


def private_dir(state_dir: str) -> str:
    """The secrets' fallback directory of the state directory ``state_dir``: ``desktop-private`` beside it."""
    return os.path.join(os.path.dirname(os.path.abspath(state_dir)), PRIVATE_DIR)


def is_token(value: str) -> bool:
    """A hook or control token as we issue them: URL-safe characters only, of a sane length."""
    return 0 < len(value) <= MAX_TOKEN_CHARS and all(ch in _TOKEN_CHARS for ch in value)


def read_token(state_dir: str, name: str) -> str | None:
    """The token kept in ``state_dir/name``, or None when it is missing or not a token."""
    try:
        with open(os.path.join(state_dir, name), encoding="ascii") as handle:
            value = handle.read(MAX_TOKEN_CHARS + 2).strip()
    except (OSError, ValueError):
        return None
    return value if is_token(value) else None


def read_service(state_dir: str) -> dict[str, object] | None:
    """What the running service recorded in ``service.json`` (its ``port``), or None. Anyone who can write
    this directory can change it: a caller proves the listener (``proof``) before sending it a token."""
    try:
        with open(os.path.join(state_dir, SERVICE_FILE), encoding="utf-8") as handle:
            recorded = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(recorded, dict):
        return None
    port = recorded.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        return None
    return recorded


def ensure_private_dir(path: str) -> None:
    """Create ``path`` (and its parents) with mode 0700; an existing one is narrowed to 0700."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.name == "posix":
        os.chmod(path, 0o700)


def hook_run_file(state_dir: str, agent: str) -> str:
    """Where ``agent``'s hook records its last run."""
    return os.path.join(state_dir, f"{HOOK_RUN_PREFIX}{agent}.json")


def write_private(path: str, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path`` atomically with ``data``, readable and writable by its owner only (0600).

    The bytes go to a new 0600 file beside it first, so the secret is never in a wider-mode file and a
    reader never sees half of it. That file's name is random and it must not exist yet (``O_EXCL``): a
    writer of ``desktop/`` who planted a link at a name it could guess would otherwise have this write
    truncate, fill and narrow the file linked to. ``sync=False`` skips the fsync (a record that may be
    lost in a crash).
    """
    directory = os.path.dirname(path) or "."
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{os.urandom(8).hex()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if sync:
                os.fsync(handle.fileno())
        if os.name == "posix":
            os.chmod(temporary, 0o600)
        os.replace(temporary, path)
    except BaseException:
        try:  # noqa: SIM105 - contextlib stays unimported on the hook's path
            os.unlink(temporary)
        except OSError:
            pass
        raise


def remove(path: str) -> None:
    """Remove ``path`` if it is there."""
    try:  # noqa: SIM105 - contextlib stays unimported on the hook's path
        os.unlink(path)
    except FileNotFoundError:
        pass
