"""Readers whose user ids a client must percent-encode can be revoked and can leave: over HTTP, with the
SDK and the CLI, on the running local stack."""

from __future__ import annotations

import json
import uuid

import pytest

from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.e2e.test_knowledge_bases_e2e import cli
from tests.support.stack import RunningStack

pytestmark = pytest.mark.e2e

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
