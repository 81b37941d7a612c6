"""``memmy-kb desktop serve``: starts and stops the local service, the only desktop process that talks to
the cloud (docs/desktop.md, "The local service"; each request's checks are ``handler``'s, the routes in
the ``*_routes`` modules and ``proxy``)."""

from __future__ import annotations

import json
import os
import threading
from typing import IO

from memmy_kb_client.desktop.handler import DesktopHTTPServer
from memmy_kb_client.desktop.link_routes import start_links, stop_links
from memmy_kb_client.desktop.state import HOST, DesktopConfig, DesktopState
from memmy_kb_client.home import advice, paths

# The service's API: what ``memmy-kb desktop serve`` and the tests start it with.
__all__ = ["DesktopConfig", "DesktopService", "DesktopStartError", "PortInUse"]


class DesktopStartError(RuntimeError):
    """The service could not start; the message says why."""


class PortInUse(DesktopStartError):
    pass


class DesktopService:
    """The local service: ``start()`` it (or use it as a context manager), then ``stop()`` it."""

    def __init__(self, config: DesktopConfig) -> None:
        self.config = config
        self.state = DesktopState(config)
        self._server: DesktopHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._lock_handle: IO[str] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.port

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> DesktopService:
        paths.ensure_private_dir(self.config.state_dir)
        self._lock_handle = _take_lock(self.config.state_dir)
        try:
            try:
                self._server = DesktopHTTPServer(self.state, self.config.port)
            except OSError as err:
                raise PortInUse(f"cannot listen on {HOST}:{self.config.port} ({err.strerror})") from err
            self.state.url = self.url
            self.state.port = self.port
            self.state.load()
            # How to start it again, for the commands' advice once it has stopped (``advice``).
            advice.record_launcher(self.config.state_dir, self.config.launcher)
            start_links(self.state)
            # For the hooks and ``memmy-kb mcp``: the port alone. The commands read it beside the control
            # token (``state.load``), since anything that can write this directory can rewrite this file.
            paths.write_private(
                os.path.join(self.config.state_dir, paths.SERVICE_FILE),
                json.dumps({"port": self.port}).encode("utf-8"),
            )
        except BaseException:
            self.stop()
            raise
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name="memmy-kb-desktop",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            if self._thread is not None:
                self._server.shutdown()
            self._server.server_close()
            # No other service writes these while this one holds the state directory's lock.
            recorded = paths.read_service(self.config.state_dir)
            if recorded is not None and recorded.get("port") == self.port:
                paths.remove(os.path.join(self.config.state_dir, paths.SERVICE_FILE))
            self.state.forget_control_token()
            self._server = None
        self.state.flows.stop()
        stop_links(self.state)
        self._thread = None
        self.state.cloud.close()
        if self._lock_handle is not None:
            self._lock_handle.close()
            self._lock_handle = None

    def __enter__(self) -> DesktopService:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _take_lock(state_dir: str) -> IO[str]:
    """Hold ``serve.lock`` for the service's life, so a second service on this state dir refuses to start."""
    fd = os.open(os.path.join(state_dir, paths.LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o600)
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        import fcntl
    except ImportError:  # Windows: no advisory lock; a second service fails on the port instead
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as err:
        handle.close()
        raise DesktopStartError(
            f"another desktop service already runs on {state_dir} (stop it, or set MEMMY_KB_HOME)"
        ) from err
    return handle
