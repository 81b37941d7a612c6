"""The desktop side: a local service that holds the cloud login, and what talks to it.

The agent hooks (``memmy_kb_client.agents.hook``) and the ``memmy-kb desktop ...`` commands talk to the local
service (started by ``server.py``; its routes and checks in ``routes``, ``proxy`` and ``handler``) on
127.0.0.1; only the service talks to the cloud. See docs/desktop.md.

This package's ``__init__`` imports nothing: the hook imports ``paths`` from it before every agent turn.
"""
