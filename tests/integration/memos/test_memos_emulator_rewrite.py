"""The emulator's rewrite mode (``--memos-rewrite``), over raw HTTP: a search still finds the memory, and
answers its text rewritten (the same on every search), its key unchanged (docs/memos.md, "Rewrite mode").
Its file-id mode (``--memos-file-ids``): a hit names its file in ``metadata.file_ids``, and only then."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from memmy_local.cli import build_parser
from memmy_local.memos_emulator.config import EmulatorConfig
from memmy_local.memos_emulator.rewrite import rewrite
from memmy_local.memos_emulator.server import MemosEmulator
from memmy_local.stack_config import StackConfig
from memmy_local.stack_parts import start_emulator
from tests.support.emulator_api import add_md, api_client, create_kb, search, wait_done

KEY = "rewrite-key"
HANDBOOK = (
    "# Travel expenses\n"
    "Employees must submit hotel receipts within 30 days of their return. Taxi fares are reimbursed"
    " against the original invoice. Meals abroad are covered up to the daily allowance of the city.\n"
    "A trip longer than two weeks needs the approval of the head of department before booking.\n"
)


@pytest.fixture(params=[False, True], ids=["verbatim", "rewrite"])
def emulator(request: pytest.FixtureRequest) -> Iterator[MemosEmulator]:
    config = EmulatorConfig(port=0, api_keys={KEY: "memmy"}, processing_delay=0, rewrite=request.param)
    with MemosEmulator(config) as running:
        yield running


@pytest.fixture
def api(emulator: MemosEmulator) -> Iterator[Any]:
    with api_client(emulator.base_url, KEY) as call:
        yield call


def test_a_search_answers_the_memory_rewritten_in_that_mode_and_verbatim_otherwise(emulator, api):
    kb_id = create_kb(api)
    wait_done(api, [add_md(api, kb_id, "handbook.md", HANDBOOK)])
    verbatim = HANDBOOK.split("\n", 1)[1].strip()

    (hit,) = search(api, [kb_id], "How many days to submit hotel receipts?")
    again = search(api, [kb_id], "taxi fares original invoice")

    assert hit["memory_key"] == "Travel expenses"
    assert [h["memory_value"] for h in again] == [hit["memory_value"]]
    if not emulator.config.rewrite:
        assert hit["memory_value"] == verbatim
        return
    assert hit["memory_value"] == rewrite(verbatim, hit["id"])
    assert hit["memory_value"] != verbatim
    assert "\n" not in hit["memory_value"]


def test_a_hit_names_its_file_in_file_id_mode_only() -> None:
    for asked in (False, True):
        config = EmulatorConfig(port=0, api_keys={KEY: "memmy"}, processing_delay=0, hit_file_ids=asked)
        with MemosEmulator(config) as emulator, api_client(emulator.base_url, KEY) as api:
            kb_id = create_kb(api)
            file_id = add_md(api, kb_id, "handbook.md", HANDBOOK)
            wait_done(api, [file_id])
            (hit,) = search(api, [kb_id], "How many days to submit hotel receipts?")
        assert hit.get("metadata") == ({"file_ids": [file_id]} if asked else None)


def test_memmy_local_takes_the_hit_mode_flags_for_the_emulator_and_the_stack() -> None:
    for flag, name in (("--memos-rewrite", "memos_rewrite"), ("--memos-file-ids", "memos_file_ids")):
        assert getattr(build_parser().parse_args(["memos", flag]), name) is True
        assert getattr(build_parser().parse_args(["up", flag]), name) is True
        assert getattr(build_parser().parse_args(["up"]), name) is False


def test_the_stack_starts_its_emulator_in_the_hit_modes_asked() -> None:
    for asked in (False, True):
        with ExitStack() as undo:
            config = StackConfig(memos_port=0, memos_rewrite=asked, memos_file_ids=not asked)
            emulator = start_emulator(undo, config)
            assert (emulator.config.rewrite, emulator.config.hit_file_ids) == (asked, not asked)
