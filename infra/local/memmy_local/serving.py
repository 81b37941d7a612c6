"""The local stack's own HTTP servers (the gateway, the control endpoint, the dev identity provider) run on
a daemon thread each: started the same way, stopped the same way."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Protocol


class LoopbackHTTPServer(ThreadingHTTPServer):
    """A thread per connection, daemon threads, and a listen backlog of 128: socketserver's default of 5
    resets connections when a test or the load test opens more at once than the accept loop has taken."""

    daemon_threads = True
    request_queue_size = 128


class Server(Protocol):
    def serve_forever(self, poll_interval: float = ...) -> None: ...

    def shutdown(self) -> None: ...

    def server_close(self) -> None: ...


def serve_in_background(server: Server, name: str) -> threading.Thread:
    """``server`` serving on a new daemon thread named ``name``; returns at once."""
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=name, daemon=True
    )
    thread.start()
    return thread


def stop_serving(server: Server, thread: threading.Thread | None) -> None:
    """Stop ``server`` (if ``thread`` serves it) and close its socket."""
    if thread is not None:
        server.shutdown()
        thread.join(timeout=5)
    server.server_close()
