"""The edge: HTTP (resolver, request guard, identity, idempotency, request/response bodies, what routes receive
through ``Depends``) and events. The adapters come from ``memmy_kb.composition`` (docs/architecture.md,
"Layers").

Importing it first makes Powertools' event handler and event classes import each of their modules on first
use (``memmy_kb.api.lazy_packages``): an API function loads its own resolver, not AppSync's and ``asyncio``.
"""

from memmy_kb.api import lazy_packages

lazy_packages.install()
