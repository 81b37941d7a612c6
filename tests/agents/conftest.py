"""The real agents' tier: Claude Code, Codex CLI and Gemini CLI, installed by ``make agents`` (pinned in
``.agents/package.json``), run offline against ``tests/support/fake_models.py`` and the local stack.

``make agents`` runs this folder inside a network namespace of its own that has only the loopback
interface (``unshare --net --map-root-user``; the first fixture brings that interface up), so the local stack, the desktop service, the fake model
server and the agents all live there, and nothing an agent tries to reach beyond 127.0.0.1 can leave the
machine. The first fixture refuses to run anywhere else.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AGENTS_DIR_ENV = "MEMMY_KB_AGENTS_DIR"


def interfaces() -> set[str]:
    """The network interfaces of this process's namespace (``/proc/net/dev`` is per namespace)."""
    lines = Path("/proc/net/dev").read_text().splitlines()[2:]
    return {line.split(":", 1)[0].strip() for line in lines}


# ioctl requests of <linux/sockios.h>, and IFF_UP of <net/if.h>.
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def bring_loopback_up() -> None:
    """``ip link set lo up``, without needing iproute2: a new namespace's loopback starts down."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH", b"lo", 0)
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        if not flags & IFF_UP:
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))


@pytest.fixture(scope="session", autouse=True)
def loopback_only() -> None:
    """Only loopback here, up, and no route anywhere else; before any other fixture starts a server."""
    if interfaces() != {"lo"}:
        pytest.fail(
            "tests/agents runs only in a network namespace with nothing but loopback: use `make agents` "
            f"(unshare --net --map-root-user); this one has {sorted(interfaces())}",
            pytrace=False,
        )
    bring_loopback_up()
    with (
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe,
        pytest.raises(OSError, match="unreachable"),
    ):
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: no route out of here


@pytest.fixture(scope="session")
def agents_bin() -> Path:
    """``.agents/node_modules/.bin``, where ``make agents`` installed the three CLIs."""
    folder = Path(os.environ.get(AGENTS_DIR_ENV) or ROOT / ".agents") / "node_modules" / ".bin"
    missing = [name for name in ("claude", "codex", "gemini") if not (folder / name).exists()]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed in {folder}: run `make agents`", pytrace=False)
    return folder
