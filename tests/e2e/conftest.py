"""The e2e tier's two targets (tests/support/stage.py): the local stack, or a deployed stage.

A test that needs the local stack's internals (the emulator's faults, moto, a stack of its own, the dev
identity provider's pages, tokens only its signer can make, timings) carries
``@pytest.mark.local_stack("why")`` and is skipped against a deployed stage with that reason; every other
test takes the ``stage`` fixture and runs against either. Asking for ``local_stack`` without the marker
is refused at collection, so no test reads the local stack by accident where there is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.stage import URL_ENV, stage_settings

HERE = Path(__file__).parent
MARKER = "local_stack"


def local_only_reason(item: pytest.Item) -> str | None:
    """Why ``item`` runs on the local stack only (its marker's reason), or None when it runs on any stage."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    if not marker.args or not isinstance(marker.args[0], str):
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{MARKER} needs its reason, a sentence")
    return str(marker.args[0])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    deployed = stage_settings() is not None
    for item in items:
        if HERE not in item.path.parents:
            continue
        reason = local_only_reason(item)
        if reason is None and MARKER in getattr(item, "fixturenames", ()):
            raise pytest.UsageError(
                f"{item.nodeid} uses the {MARKER} fixture: take the stage fixture, or mark it "
                f'@pytest.mark.{MARKER}("why it needs the local stack")'
            )
        if deployed and reason is not None:
            item.add_marker(pytest.mark.skip(reason=f"local stack only ({URL_ENV} is set): {reason}"))
