"""The walking skeleton and the seed's sharing story over HTTP on the stage, with the CLI."""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from http import HTTPStatus

import httpx
import pytest

from tests.support.e2e_cli import cli
from tests.support.stack import LOCAL_CLI, RunningStack
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e


def dev_token(stack: RunningStack, user: str, *args: str) -> str:
    """A token printed by `memmy-local token`, as a person would get one."""
    env = {**os.environ, "MEMMY_KB_HOME": str(stack.key_path.parent)}
    out = subprocess.run(  # noqa: S603
        [*LOCAL_CLI, "token", user, *args], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    return out.stdout.strip()


def test_create_and_list_over_http_maps_to_one_memos_kb(stage: Stage) -> None:
    name = f"alice-{uuid.uuid4().hex[:8]}"
    if stage.local is not None:  # a token as a person gets one from the local stack
        user, token = name, dev_token(stage.local, name, "--name", "Alice")
    else:
        user, token = (alice := stage.user(name, name="Alice")).user_id, alice.token
    headers = {"Authorization": f"Bearer {token}"}
    kb_name = stage.kb_name("产品资料")
    with httpx.Client(base_url=stage.api_url, headers=headers, timeout=30) as api:
        created = api.post("/knowledge-bases", json={"name": kb_name}, headers={"Idempotency-Key": "k1"})
        assert created.status_code == HTTPStatus.CREATED, created.text
        kb = created.json()
        again = api.post("/knowledge-bases", json={"name": kb_name}, headers={"Idempotency-Key": "k1"})
        assert again.json() == kb
        listed = api.get("/knowledge-bases").json()["items"]
        invalid = api.post("/knowledge-bases", json={"name": ""})
    assert [k["id"] for k in listed] == [kb["id"]]
    assert (kb["name"], kb["role"], kb["owner"]) == (
        kb_name,
        "owner",
        {"user_id": user, "display_name": "Alice", "contact": None},  # no verified phone or email
    )
    assert invalid.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert invalid.json()["error"]["code"] == "validation_error"
    if stage.local is not None:
        one_memos_kb_named_for(stage.local, kb["id"])


def one_memos_kb_named_for(local_stack: RunningStack, kb_id: str) -> None:
    """The emulator's MemOS holds exactly one KB for ``kb_id``."""
    state = httpx.get(f"{local_stack.memos_url}/_emulator/state", timeout=10).json()
    assert [k["name"] for k in state["knowledge_bases"] if k["name"] == f"memmy:{kb_id}"] == [f"memmy:{kb_id}"]


@pytest.mark.local_stack("an expired token, which only the local stack's signer makes")
def test_expired_and_foreign_tokens_are_refused(local_stack: RunningStack) -> None:
    expired = local_stack.token("alice", ttl_seconds=-60)
    resp = httpx.get(
        f"{local_stack.api_url}/knowledge-bases", headers={"Authorization": f"Bearer {expired}"}, timeout=10
    )
    assert resp.status_code == HTTPStatus.UNAUTHORIZED


def test_the_cli_creates_and_lists(stage: Stage) -> None:
    token = stage.user(f"cli-{uuid.uuid4().hex[:8]}", name="CLI User").token
    created = cli(stage, token, "kb", "create", stage.kb_name("命令行资料"), "--json")
    assert created.returncode == 0, created.stderr
    kb = json.loads(created.stdout)
    listed = cli(stage, token, "kb", "ls")
    assert listed.returncode == 0, listed.stderr
    assert kb["id"] in listed.stdout
    assert stage.kb_name("命令行资料") in listed.stdout
    refused = cli(stage, token, "kb", "create", "")
    assert refused.returncode == 1
    assert "validation_error" in refused.stderr


def test_the_seed_sharing_story(stage: Stage) -> None:
    """The product manager shares by phone; the salesperson sees it, toggles recall, is revoked."""
    # Given a product manager and a salesperson whose phone is written without +86
    run = uuid.uuid4()
    manager = stage.user(f"pm-{run.hex[:8]}", name="产品经理").token
    sales_number = "138" + str(run.int % 10**8).zfill(8)  # a mainland number, written without +86
    salesperson = stage.user(f"sales-{run.hex[:8]}", name="销售同事", phone=sales_number)
    sales_id, sales = salesperson.user_id, salesperson.token
    assert cli(stage, manager, "me").returncode == 0
    me = cli(stage, sales, "me", "--json")
    assert json.loads(me.stdout)["phone"] == "+86" + sales_number

    # When the manager shares a new KB by that number, typed with spaces
    kb_name = stage.kb_name("MemOS 资料")
    kb = json.loads(cli(stage, manager, "kb", "create", kb_name, "--json").stdout)
    shared = cli(
        stage,
        manager,
        "kb",
        "share",
        kb["id"],
        sales_number[:3] + " " + sales_number[3:7] + " " + sales_number[7:],
    )
    assert shared.returncode == 0, shared.stderr
    assert "销售同事" in shared.stdout

    # Then the salesperson sees it and toggles its recall, and the manager sees them as a member
    listing = cli(stage, sales, "kb", "ls")
    assert "Shared with me:" in listing.stdout
    assert re.search(rf"{re.escape(kb['id'])}  recall on +{re.escape(kb_name)}  \(from 产品经理\)", listing.stdout)
    off = json.loads(cli(stage, sales, "kb", "recall", kb["id"], "off", "--json").stdout)
    assert off["recall"] is False
    on = json.loads(cli(stage, sales, "kb", "recall", kb["id"], "on", "--json").stdout)
    assert on["recall"] is True
    members = cli(stage, manager, "kb", "members", kb["id"]).stdout
    assert sales_id in members

    # When the manager revokes it, then it is gone for the salesperson
    assert cli(stage, manager, "kb", "unshare", kb["id"], sales_id).returncode == 0
    after = json.loads(cli(stage, sales, "kb", "ls", "--json").stdout)
    assert after == []
    gone = cli(stage, sales, "kb", "recall", kb["id"], "on")
    assert gone.returncode == 1
    assert gone.stderr.startswith(f"error: no knowledge base with the id or name '{kb['id']}'"), gone.stderr

    # When it is shared again, then the salesperson can also leave on their own.
    assert cli(stage, manager, "kb", "share", kb["id"], sales_id).returncode == 0
    left = cli(stage, sales, "kb", "leave", kb["id"])
    assert left.returncode == 0, left.stderr
    assert json.loads(cli(stage, sales, "kb", "ls", "--json").stdout) == []


def test_folders_with_the_cli(stage: Stage) -> None:
    token = stage.user(f"org-{uuid.uuid4().hex[:8]}", name="Organiser").token
    kb = json.loads(cli(stage, token, "kb", "create", stage.kb_name("整理"), "--json").stdout)["id"]
    made = cli(stage, token, "folders", "mk", kb, "合同", "--json")
    assert made.returncode == 0, made.stderr
    parent = json.loads(made.stdout)["id"]
    child = json.loads(
        cli(stage, token, "folders", "mk", kb, "2026", "--parent", parent, "--json").stdout
    )["id"]
    assert cli(stage, token, "folders", "rename", kb, child, "2027").returncode == 0
    cycle = cli(stage, token, "folders", "mv", kb, parent, "--parent", child)
    assert cycle.returncode == 1
    assert "folder_cycle" in cycle.stderr
    assert cli(stage, token, "folders", "mv", kb, child).returncode == 0
    root = cli(stage, token, "files", "ls", kb)
    assert root.returncode == 0, root.stderr
    assert "合同" in root.stdout
    assert "2027" in root.stdout


def test_the_cli_uploads_and_waits_until_processed(stage: Stage, tmp_path) -> None:
    token = stage.user(f"up-{uuid.uuid4().hex[:8]}", name="Uploader").token
    kb = json.loads(cli(stage, token, "kb", "create", stage.kb_name("上传"), "--json").stdout)["id"]
    folder = json.loads(cli(stage, token, "folders", "mk", kb, "介绍", "--json").stdout)["id"]
    good = tmp_path / "MemOS产品介绍.md"
    good.write_text("# MemOS 产品介绍\nMemOS 是面向大模型应用的记忆操作系统。\n", encoding="utf-8")
    bad = tmp_path / "setup.pdf"
    bad.write_bytes(b"MZ\x90\x00" + b"\x00" * 200)
    uploaded = cli(
        stage,
        token,
        "files",
        "upload",
        kb,
        str(good),
        str(bad),
        "--folder",
        folder,
        "--wait",
        "--timeout",
        "60",
    )
    assert uploaded.returncode == 1, uploaded.stderr  # one of the two is refused
    assert "100%" in uploaded.stderr
    # Each file's line comes as it finishes, in whichever order
    outcomes = sorted(tuple(line.split(maxsplit=1)) for line in uploaded.stdout.splitlines())
    assert outcomes[0] == ("available", "MemOS产品介绍.md")
    assert outcomes[1][0] == "failed"
    assert outcomes[1][1] == "setup.pdf  (The file is not a valid PDF.)"
    listing = cli(stage, token, "files", "ls", kb, "--folder", folder)
    assert "available  " in listing.stdout
    assert "MemOS产品介绍.md" in listing.stdout
