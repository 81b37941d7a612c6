"""The e2e tier's two targets (tests/support/stage.py): the local stack, or a deployed stage.

A test that needs the local stack's internals (the emulator's faults, moto, a stack of its own, the dev
identity provider's pages, tokens only its signer makes, time budgets) carries
``@pytest.mark.local_stack("why")`` and is skipped against a deployed stage with that reason; every other
test takes the ``stage`` fixture and runs against either. Asking for ``local_stack`` without the marker
is refused at collection, so no test reads the local stack by accident where there is none.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.stage import mark_local_only, stage_settings


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    mark_local_only(items, under=Path(__file__).parent, deployed=stage_settings() is not None)
