"""The ``memos_emulator`` fixture: a real MemOS emulator on a free loopback port, reset for each test."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memmy_local.memos_emulator.config import EmulatorConfig
from memmy_local.memos_emulator.server import Fault, MemosEmulator

API_KEY = "test-memos-key"
OTHER_PROJECT_KEY = "other-project-key"


@dataclass
class EmulatorHandle:
    emulator: MemosEmulator
    api_key: str = API_KEY
    other_project_key: str = OTHER_PROJECT_KEY

    @property
    def base_url(self) -> str:
        return self.emulator.base_url

    @property
    def root_url(self) -> str:
        return self.emulator.root_url

    def state(self) -> dict[str, Any]:
        return self.emulator.state()

    def add_fault(self, endpoint: str, **kwargs: Any) -> None:
        self.emulator.add_fault(Fault(endpoint=endpoint, **kwargs))

    def clear_faults(self) -> None:
        self.emulator.clear_faults()

    def pause_processing(self, paused: bool = True) -> None:
        """Hold every new file and new version ``running`` (until called with False, or reset)."""
        self.emulator.pause_processing(paused)

    def calls(self, endpoint: str) -> int:
        count: int = self.state()["calls"].get(endpoint, 0)
        return count


@pytest.fixture(scope="session")
def _memos_emulator_server() -> Iterator[MemosEmulator]:
    config = EmulatorConfig(
        port=0,
        api_keys={API_KEY: "memmy", OTHER_PROJECT_KEY: "someone-else"},
        processing_delay=0,
    )
    with MemosEmulator(config) as emulator:
        yield emulator


@pytest.fixture
def memos_emulator(_memos_emulator_server: MemosEmulator) -> Iterator[EmulatorHandle]:
    _memos_emulator_server.reset()
    yield EmulatorHandle(_memos_emulator_server)
    _memos_emulator_server.clear_faults()
