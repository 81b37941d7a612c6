"""Lambda SnapStart: prime a function before its snapshot, repair what must not be shared after a restore.

With SnapStart (template.yaml: ``SnapStart`` on a published version, the API's integration on its alias)
Lambda runs a function's init once when the version is published, runs the before-snapshot hooks,
snapshots the environment's memory, and starts new environments from that snapshot. A handler module
calls ``register(prime)`` at import: inside Lambda that registers, through ``snapshot_restore_py`` (the
runtime's hook registry, pinned in the layer), ``prime`` plus ``release_collector`` before the snapshot
and ``after_restore`` after every restore. Outside Lambda (tests, the local stack) nothing is registered:
the hooks never run and everything is built on first use, as without SnapStart.

What the snapshot may hold and what it must not (docs/architecture.md, "SnapStart"): modules, the AWS
clients' models and endpoint data, the MemOS clients' TLS context, pydantic validators and the resolver's
compiled routes are built by ``prime`` (``memmy_kb.api.priming``); no secret value, no open connection, no
token or credentials, no random state that must differ per environment and no clock-derived value is.
``after_restore`` makes sure of the last ones: fresh randomness (Python's and OpenSSL's), connection
pools and clients dropped (rebuilt on first use, against the primed models), cached secrets and keys
dropped (their age cannot be known across a snapshot: the monotonic clock stands still while it is
stored), and the MemOS rate governor's history forgotten. ``tests/unit/api/test_snapstart.py`` restores a
primed process twice (fork) and shows the two share none of it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable

from memmy_kb import cold_start

# OpenSSL's generator is mixed with this much fresh kernel entropy after a restore.
_RESEED_BYTES = 48


def register(prime: Callable[[], None]) -> bool:
    """Register ``prime`` (then the collector's release) before the snapshot and ``after_restore`` after
    each restore, inside Lambda only; True when registered."""
    if not cold_start.in_lambda():
        return False
    from snapshot_restore_py import register_after_restore, register_before_snapshot

    # Before-snapshot hooks run in the reverse order of registration: prime first, then the release.
    register_before_snapshot(release_collector)
    register_before_snapshot(prime)
    register_after_restore(after_restore)
    return True


def release_collector() -> None:
    """What priming built is frozen with the rest of the init (``cold_start.release``): the restored
    environments start with the collector on and never walk those objects."""
    cold_start.release()


def after_restore() -> None:
    """Make this restored environment its own: randomness, connections, secrets, the rate history."""
    reseed()
    from memmy_kb import composition

    composition.forget_environment_state()


def reseed() -> None:
    """Fresh randomness from the kernel for Python's shared generator and OpenSSL's."""
    import ssl  # after a restore only; the clients' connections import it on their first request

    random.seed()  # from os.urandom
    ssl.RAND_add(os.urandom(_RESEED_BYTES), float(_RESEED_BYTES))
