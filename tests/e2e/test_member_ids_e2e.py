"""Readers whose user ids a client must percent-encode can be revoked and can leave: over HTTP, with the
SDK and the CLI, and on the page in a real browser, on the running local stack."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.e2e_cli import cli
from tests.support.page_browser import chromium, kb_item, new_page, start_user
from tests.support.stack import RunningStack
from tests.support.stage import Stage

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("user ids chosen by the test, which only the local stack's signer issues"),
]

# What login providers really issue (Auth0, Google through Auth0), and ids with non-ASCII and a space.
READER_IDS = ["auth0|{}", "google-oauth2|1{}", "张 三-{}", "a/b%2F{}"]


def _kb_ids(stack: RunningStack, token: str) -> set[str]:
    listed = cli(stack, token, "kb", "ls", "--json")
    assert listed.returncode == 0, listed.stderr
    return {kb["id"] for kb in json.loads(listed.stdout)}


@pytest.mark.parametrize("pattern", READER_IDS)
def test_a_reader_with_such_an_id_is_revoked_and_can_leave(local_stack: RunningStack, pattern: str) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner_token = local_stack.token(f"owner-{suffix}", name="Owner")
    reader_id = pattern.format(suffix)
    reader_token = local_stack.token(reader_id, name="Reader")
    assert cli(local_stack, reader_token, "me").returncode == 0
    kb_id = json.loads(cli(local_stack, owner_token, "kb", "create", "资料", "--json").stdout)["id"]

    # Given the KB shared by the reader's user id
    shared = cli(local_stack, owner_token, "kb", "share", kb_id, reader_id, "--json")
    assert shared.returncode == 0, shared.stderr
    assert json.loads(shared.stdout)["user_id"] == reader_id
    assert kb_id in _kb_ids(local_stack, reader_token)

    # When the owner revokes them with the CLI, then they lose the KB
    revoked = cli(local_stack, owner_token, "kb", "unshare", kb_id, reader_id)
    assert revoked.returncode == 0, revoked.stderr
    assert kb_id not in _kb_ids(local_stack, reader_token)

    # When shared again and the reader leaves with the CLI, then it is gone again
    assert cli(local_stack, owner_token, "kb", "share", kb_id, reader_id).returncode == 0
    left = cli(local_stack, reader_token, "kb", "leave", kb_id)
    assert left.returncode == 0, left.stderr
    assert kb_id not in _kb_ids(local_stack, reader_token)

    # And the SDK revokes the same way (it quotes the id exactly once)
    assert cli(local_stack, owner_token, "kb", "share", kb_id, reader_id).returncode == 0
    with MemmyClient(ClientConfig(endpoint=local_stack.api_url, token=owner_token)) as client:
        members = {m["user_id"] for m in client.list_members(kb_id)}
        assert reader_id in members
        client.remove_member(kb_id, reader_id)
        assert reader_id not in {m["user_id"] for m in client.list_members(kb_id)}


# Ids a browser would mangle if the page escaped them the usual way: the dot segments, and the
# characters encodeURIComponent leaves as they are.
PAGE_READER_IDS = [".", "..", "!'()*{}", "a.b'(c){}"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as running:
        yield running


def test_on_the_page_an_owner_removes_such_readers_and_such_a_reader_leaves(
    local_stack: RunningStack, browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    suffix = uuid.uuid4().hex[:8]
    owner_id = f"owner-{suffix}"
    owner_token = local_stack.token(owner_id, name="Owner")
    assert cli(local_stack, owner_token, "me").returncode == 0
    reader_ids = [pattern.format(suffix) for pattern in PAGE_READER_IDS]
    names = {reader_id: f"Reader {i} {suffix}" for i, reader_id in enumerate(reader_ids)}
    tokens = {reader_id: local_stack.token(reader_id, name=names[reader_id]) for reader_id in reader_ids}
    for token in tokens.values():
        assert cli(local_stack, token, "me").returncode == 0
    kb_name = f"资料 {suffix}"
    kb_id = json.loads(cli(local_stack, owner_token, "kb", "create", kb_name, "--json").stdout)["id"]
    for reader_id in reader_ids:
        shared = cli(local_stack, owner_token, "kb", "share", kb_id, reader_id, "--json")
        assert shared.returncode == 0, shared.stderr
        assert json.loads(shared.stdout)["user_id"] == reader_id

    with ExitStack() as started:
        people = Stage.on_local(local_stack)
        owner = start_user(local_stack, tmp_path / "owner", people.user(owner_id, name="Owner"))
        started.callback(owner.stop)
        # Given the owner's page, when they remove each reader from the KB's members
        manager = new_page(browser, owner)
        kb_item(manager, "mine", kb_name).get_by_role("button", name=kb_name, exact=True).click()
        manager.get_by_role("button", name="Share").click()
        members = manager.get_by_role("list", name="Members")
        for reader_id in reader_ids:
            expect(members).to_contain_text(f"({reader_id})")
        for reader_id in reader_ids:
            manager.get_by_role("button", name=f"Remove {names[reader_id]}").click()
            expect(members.locator("li").filter(has_text=names[reader_id])).to_have_count(0)
        expect(members).to_contain_text("Not shared with anyone yet.")
        expect(manager.locator("#dialog-error")).to_have_text("")
        manager.context.close()
        # Then every one of them has lost it
        for reader_id in reader_ids:
            assert kb_id not in _kb_ids(local_stack, tokens[reader_id]), reader_id

        # When shared again, each reader leaves it from their own page
        for reader_id in reader_ids:
            assert cli(local_stack, owner_token, "kb", "share", kb_id, reader_id).returncode == 0
            workdir = tmp_path / f"reader-{reader_ids.index(reader_id)}"
            reader = start_user(local_stack, workdir, people.user(reader_id))
            started.callback(reader.stop)
            page = new_page(browser, reader)
            kb_item(page, "shared", kb_name).get_by_role("button", name="Leave").click()
            page.get_by_role("dialog").get_by_role("button", name="Leave").click()
            expect(page.get_by_role("button", name=kb_name, exact=True)).to_have_count(0)
            page.context.close()
            # Then it is gone for them
            assert kb_id not in _kb_ids(local_stack, tokens[reader_id]), reader_id
