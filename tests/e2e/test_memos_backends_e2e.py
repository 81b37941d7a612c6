"""Two MemOS backends on the running local stack: ``memmy-local up --memos-projects 2 --memos-kb-quota 2``.

The emulator holds two projects, each with its own key and a quota of two KBs; the stack's MemOS secret
lists both. Creates spread over them up to four KBs, the fifth is 503; a KB deleted and cleaned up frees
its project's place for the next create; a reader with KBs on both gets excerpts from both.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from http import HTTPStatus
from typing import Any

import boto3
import httpx
import pytest

from memmy_local.memos_emulator.config import DEFAULT_API_KEY
from tests.support.polling import wait_until
from tests.support.stack import RunningStack, start_stack, stop_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("a stack of its own with two MemOS projects in the emulator"),
]

DOC = "# 季度路线图\n\n第三季度发布知识库共享功能，第四季度上线团队空间。{marker}\n"
QUESTION = "第三季度发布什么功能"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    workdir = tmp_path_factory.mktemp("two-backends")
    process, running = start_stack(workdir, extra=("--memos-projects", "2", "--memos-kb-quota", "2"))
    try:
        yield running
    finally:
        stop_stack(process)


def api(stack: RunningStack, user: str, **claims: Any) -> httpx.Client:
    token = stack.token(user, **claims)
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def memos_kbs(stack: RunningStack) -> dict[str, dict[str, Any]]:
    """The emulator's linked KBs by the name the service gave them (``memmy:<kb_id>``)."""
    state = httpx.get(f"{stack.memos_url}/_emulator/state", timeout=10).json()
    return {kb["name"].removeprefix("memmy:"): kb for kb in state["knowledge_bases"] if kb["linked"]}


def add_document(stack: RunningStack, kb_id: str, text: str) -> None:
    """Straight into the KB's MemOS KB, with the key of the project holding it; wait until searchable."""
    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.key import StaticApiKeyProvider
    from memmy_kb.domain.engine import FileInput

    kb = memos_kbs(stack)[kb_id]
    key = f"{DEFAULT_API_KEY}-{kb['project'].rsplit('-', 1)[1]}"  # project memmy-p<n>: key <default>-p<n>
    with MemosClient(stack.memos_api_url, StaticApiKeyProvider(key)) as client:
        (added,) = client.add_knowledgebase_files(
            kb["id"], [FileInput.from_bytes(text.encode(), name="路线图.md", mime_type="text/markdown")]
        )
        wait_until(
            lambda: client.get_knowledgebase_files([added.id])[0].status.value == "available",
            timeout=20,
            message="the document to be processed",
        )


def outbox_gone(stack: RunningStack, cleanup_id: str) -> bool:
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=stack.moto_url,
        region_name="us-east-1",
        aws_access_key_id="memmy-local",
        aws_secret_access_key="memmy-local",
    )
    (table,) = dynamodb.list_tables()["TableNames"]
    key = {"PK": {"S": f"CLEANUP#{cleanup_id}"}, "SK": {"S": "CLEANUP"}}
    return "Item" not in dynamodb.get_item(TableName=table, Key=key, ConsistentRead=True)


def test_kbs_spread_over_two_projects_a_full_pool_is_503_a_cleanup_frees_a_place_and_recall_reads_both(
    stack: RunningStack,
) -> None:
    # Given two MemOS projects of two KBs each, an owner and a reader
    tag = uuid.uuid4().hex[:8]
    owner, reader = f"owner-{tag}", f"reader-{tag}"
    with api(stack, owner, name="Olivia") as olivia, api(stack, reader, name="Rita") as rita:
        for client in (olivia, rita):
            assert client.put("/me").status_code == HTTPStatus.OK

        # When four KBs are created, then two go to each project, each KB in the project its create chose
        made = [olivia.post("/knowledge-bases", json={"name": f"资料{i}"}) for i in range(4)]
        assert [r.status_code for r in made] == [HTTPStatus.CREATED] * 4, [r.text for r in made]
        ids = [r.json()["id"] for r in made]
        project_of = {kb_id: memos_kbs(stack)[kb_id]["project"] for kb_id in ids}
        assert Counter(project_of.values()) == {"memmy-p1": 2, "memmy-p2": 2}

        # When a fifth is asked for, then every backend is full: 503
        fifth = olivia.post("/knowledge-bases", json={"name": "第五个"})
        assert fifth.status_code == HTTPStatus.SERVICE_UNAVAILABLE, fifth.text
        assert fifth.json()["error"]["code"] == "memos_quota_exhausted"

        # When a reader of one KB on each project asks, then the excerpts come from both
        on_p1 = next(k for k in ids if project_of[k] == "memmy-p1")
        on_p2 = next(k for k in ids if project_of[k] == "memmy-p2")
        for kb_id in (on_p1, on_p2):
            shared = olivia.post(f"/knowledge-bases/{kb_id}/members", json={"identifier": reader})
            assert shared.status_code == HTTPStatus.CREATED, shared.text
            add_document(stack, kb_id, DOC.format(marker=f"M{kb_id}"))
        recalled = rita.post("/recall", json={"query": QUESTION, "limit": 5})
        assert recalled.status_code == HTTPStatus.OK, recalled.text
        assert {item["knowledge_base"]["id"] for item in recalled.json()["items"]} == {on_p1, on_p2}

        # When a KB of project 2 is deleted (and cleaned up), then its place is free: the next create lands there
        gone = next(k for k in ids if project_of[k] == "memmy-p2" and k != on_p2)
        deleted = olivia.delete(f"/knowledge-bases/{gone}")
        assert deleted.status_code == HTTPStatus.ACCEPTED, deleted.text
        cleanup_id = deleted.json()["cleanup_id"]
        wait_until(lambda: outbox_gone(stack, cleanup_id), timeout=30, message="the cleanup to finish")
        again = olivia.post("/knowledge-bases", json={"name": "新的"})
        assert again.status_code == HTTPStatus.CREATED, again.text
        assert memos_kbs(stack)[again.json()["id"]]["project"] == "memmy-p2"
        counts = Counter(kb["project"] for kb in memos_kbs(stack).values())
        assert counts == {"memmy-p1": 2, "memmy-p2": 2}
