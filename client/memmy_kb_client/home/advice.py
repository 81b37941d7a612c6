"""How to word advice so that the person can run it as printed: our commands by the name their shell
finds, or by the path of the installed script when that is not on ``PATH`` (``.venv/bin/memmy-kb`` in a
checkout), and how to start the service again, which for a service the local stack runs is the stack's own
command (``make run`` in the checkout), not ``memmy-kb desktop serve``.

The local stack records how it was started (``Launcher``) in the private directory beside the service's
state when it starts the service there; ``memmy-kb desktop serve`` removes that record. The commands read
it when no service answers. It is never read from ``desktop/``, which an agent's sandbox may write: what
is printed as a command to run must not be theirs to choose.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from dataclasses import dataclass
from typing import Final

from memmy_kb_client.home import paths

KB: Final = "memmy-kb"
LAUNCHER_FILE: Final = "launcher.json"
_MAX_FIELD_CHARS: Final = 500


def _installed(name: str) -> str | None:
    """Our script ``name`` as this process knows it: what it was started as, else the one beside its
    interpreter (a virtualenv's ``bin/``), else None."""
    started = sys.argv[0] if sys.argv else ""
    candidates = [started] if os.path.basename(started) == name else []
    candidates.append(os.path.join(os.path.dirname(sys.executable), name))
    return next((path for path in candidates if os.path.isfile(path)), None)


def _shown(path: str) -> str:
    """``path`` relative to the working directory when it lies under it (``.venv/bin/memmy-kb``), else
    absolute; quoted for a shell when it needs it."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return shlex.quote(absolute if relative.startswith("..") else relative)


def program(name: str = KB) -> str:
    """How the person runs our command ``name``: its bare name when their ``PATH`` finds this very
    installation, else the installed script's path; the bare name when no script is found."""
    installed = _installed(name)
    if installed is None:
        return name
    found = shutil.which(name)
    if found is not None and os.path.realpath(found) == os.path.realpath(installed):
        return name
    return _shown(installed)


def default_home() -> str:
    return os.path.join(os.path.expanduser("~"), ".memmy-kb")


def command(*words: str, name: str = KB, home: str | None = None) -> str:
    """``memmy-kb WORDS`` as the person can run it; with ``home`` other than the default home, prefixed
    by ``MEMMY_KB_HOME=…`` (the service's or a demo's own home)."""
    prefix = ""
    if home is not None and os.path.abspath(home) != os.path.abspath(default_home()):
        prefix = f"{paths.HOME_ENV}={shlex.quote(os.path.abspath(home))} "
    return " ".join([prefix + program(name), *words])


@dataclass(frozen=True)
class Launcher:
    """How the local stack that runs a desktop service was started: the command (``make run``,
    ``make run ARGS="--demo"``, ``memmy-local up``) and the directory to run it in."""

    command: str
    directory: str

    def sentence(self) -> str:
        return f"`{self.command}` (in {self.directory})"


def _launcher_path(state_dir: str) -> str:
    return os.path.join(paths.private_dir(state_dir), LAUNCHER_FILE)


def record_launcher(state_dir: str, launcher: Launcher | None) -> None:
    """Record (or, for None: forget) what started the service of ``state_dir``."""
    path = _launcher_path(state_dir)
    if launcher is None:
        paths.remove(path)
        return
    paths.ensure_private_dir(os.path.dirname(path))
    record = {"command": launcher.command, "directory": launcher.directory}
    paths.write_private(path, json.dumps(record).encode("utf-8"), sync=False)


def read_launcher(state_dir: str) -> Launcher | None:
    try:
        with open(_launcher_path(state_dir), encoding="utf-8") as handle:
            record = json.loads(handle.read(4096))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    fields = [record.get("command"), record.get("directory")]
    if not all(isinstance(f, str) and 0 < len(f) <= _MAX_FIELD_CHARS and f.isprintable() for f in fields):
        return None
    return Launcher(str(fields[0]), str(fields[1]))


def service_commands(state_dir: str, launcher: Launcher | None) -> dict[str, str]:
    """What the page and the service's own pages tell the person to run, as they can run it: ``open`` and
    ``login`` (with the service's ``MEMMY_KB_HOME`` when it is not the default), and ``stack``, the local
    stack's command, when the stack runs the service."""
    home = os.path.dirname(os.path.abspath(state_dir))
    found = {name: command("desktop", name, home=home) for name in ("open", "login")}
    if launcher is not None:
        found["stack"] = launcher.command
    return found


def how_to_start(state_dir: str, *, with_home: bool = False) -> str:
    """ "start it with …": the local stack's command when one ran this service, else ``desktop serve``
    (``with_home``: with ``MEMMY_KB_HOME=…`` when the service's home is not the default, for advice read
    where that variable may not be set, such as an agent's)."""
    launcher = read_launcher(state_dir)
    if launcher is not None:
        return f"start it with {launcher.sentence()}"
    home = os.path.dirname(os.path.abspath(state_dir)) if with_home else None
    return f"start it with `{command('desktop', 'serve', home=home)}`"


def missing_folder_advice(directory: str) -> str:
    """What to do about a linked folder that is missing, first things first: reconnect or put it back (its
    sync resumes by itself), or stop syncing it; the deletion last, for when its files should go."""
    folder = shlex.quote(directory)
    return (
        f"reconnect the disk or put the folder back and its sync resumes, or stop syncing it with "
        f"`{command('desktop', 'unlink', folder)}` (its files stay in the knowledge base); only if its files "
        f"should go from the knowledge base too: `{command('desktop', 'confirm', folder)}`"
    )
