"""Creates over several MemOS backends, through the create handler on moto and the MemOS emulator's two
projects: concurrent creates never place more KBs on a backend than its ``max_kbs``."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus

from tests.support.aws import TWO_BACKENDS, Service, memos_backends


def test_twenty_concurrent_creates_with_room_for_six_make_exactly_six_and_no_project_passes_its_cap(
    service: Service,
) -> None:
    with memos_backends(service, {"p1": 2, "p2": 4}):
        assert (
            service.call("GET", "/knowledge-bases", "warm").status == HTTPStatus.OK
        )  # load the handler once

        def create(i: int) -> int:
            return service.call("POST", "/knowledge-bases", f"user-{i}", body={"name": f"KB {i}"}).status

        with ThreadPoolExecutor(max_workers=20) as pool:
            statuses = Counter(pool.map(create, range(20)))

        assert statuses == {HTTPStatus.CREATED: 6, HTTPStatus.SERVICE_UNAVAILABLE: 14}
        linked = Counter(kb["project"] for kb in service.memos.state()["knowledge_bases"] if kb["linked"])
        assert linked == {TWO_BACKENDS["p1"]: 2, TWO_BACKENDS["p2"]: 4}
