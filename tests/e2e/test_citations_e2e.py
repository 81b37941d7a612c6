"""Every excerpt names its document, on the running local stack (docs/architecture.md, "Recall").

Two files of one KB share a section heading (what MemOS gives as an excerpt's title); the excerpt of a
question answered in one of them names that file (id, name, folder path), and the block the agent gets
cites it by name. Replaced, the same file id answers at its new version, never with the old text. And over
a synced folder of real documents (the licences and READMEs of the packages installed here), every excerpt
that names a file names one whose text holds it.
"""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from http import HTTPStatus
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.e2e_cli import cli, ok_json
from tests.support.polling import wait_until
from tests.support.stack import CLI, RunningStack

pytestmark = [pytest.mark.e2e, pytest.mark.local_stack("files uploaded and synced, recall asked")]


def recall(stack: RunningStack, token: str, query: str) -> dict[str, Any]:
    reply = httpx.post(
        f"{stack.api_url}/recall",
        json={"query": query},
        headers={"Authorization": f"Bearer {token}"},
        timeout=30,
    )
    assert reply.status_code == HTTPStatus.OK, reply.text
    return reply.json()  # type: ignore[no-any-return]


def holding(items: list[dict[str, Any]], word: str) -> list[dict[str, Any]]:
    return [item for item in items if word in item["content"]]


def upload(stack: RunningStack, token: str, kb: str, path: Path, folder: str) -> None:
    done = cli(stack, token, "files", "upload", kb, str(path), "--folder", folder, "--wait", "--timeout", "60")
    assert done.returncode == 0, done.stderr


def test_an_excerpt_names_the_file_it_comes_from_and_its_replacement_keeps_the_id(
    local_stack: RunningStack, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner = local_stack.token(f"cite-owner-{suffix}", name="Owner")
    refund, delivery, renewed = f"kingfisher{suffix}", f"heron{suffix}", f"osprey{suffix}"
    kb = ok_json(local_stack, owner, "kb", "create", "Policies")["id"]
    for folder in ("policies", "sales"):
        assert cli(local_stack, owner, "folders", "mk", kb, folder).returncode == 0
    # Given two files whose sections share the heading "Refunds", each with words of its own
    handbook = tmp_path / "handbook.md"
    handbook.write_text(
        f"# Handbook\n\n## Refunds\n\nA customer asks for a refund within thirty days; the {refund} desk "
        "checks the order and pays the money back to the original card within five working days.\n",
        encoding="utf-8",
    )
    faq = tmp_path / "faq.md"
    faq.write_text(
        f"# Sales FAQ\n\n## Refunds\n\nShipping costs are kept when goods travel by {delivery} freight, "
        "and the warehouse books the return label once the parcel has been weighed at the counter.\n",
        encoding="utf-8",
    )
    upload(local_stack, owner, kb, handbook, "policies")
    upload(local_stack, owner, kb, faq, "sales")
    files = {f["name"]: f for f in ok_json(local_stack, owner, "files", "ls", kb, "--folder", "policies")["files"]}

    # When the owner asks what only the handbook answers
    answer = recall(local_stack, owner, f"how does the {refund} desk pay a refund back")
    [item] = holding(answer["items"], refund)
    # Then the excerpt names the handbook, not the FAQ whose heading is the same
    assert item["title"] == "Refunds"
    assert item["file"] == {
        "id": files["handbook.md"]["id"],
        "name": "handbook.md",
        "folder_path": "policies",
        "version": 1,
        "knowledge_base_id": kb,
    }
    assert item["files"] == []
    assert "《handbook.md》 § Refunds" in answer["context"]
    assert "policies" in answer["context"]
    [other] = holding(recall(local_stack, owner, f"{delivery} freight return label")["items"], delivery)
    assert (other["file"]["name"], other["file"]["folder_path"]) == ("faq.md", "sales")

    # When the handbook is replaced, the same file answers at version 2 with its new words only
    handbook.write_text(
        f"# Handbook\n\n## Refunds\n\nRefunds now go through the {renewed} portal, which pays the money "
        "back to the original card within two working days of the request.\n",
        encoding="utf-8",
    )
    replaced = cli(local_stack, owner, "files", "replace", kb, files["handbook.md"]["id"], str(handbook), "--wait")
    assert replaced.returncode == 0, replaced.stderr
    answer = recall(local_stack, owner, f"the {renewed} portal pays refunds back")
    [item] = holding(answer["items"], renewed)
    assert (item["file"]["id"], item["file"]["version"]) == (files["handbook.md"]["id"], 2)
    assert not holding(recall(local_stack, owner, f"the {refund} desk refund")["items"], refund)


def real_documents(into: Path, count: int) -> list[Path]:
    """Licences and READMEs (package descriptions) of the distributions installed here: real text."""
    picked: list[Path] = []
    for dist in sorted(metadata.distributions(), key=lambda d: d.metadata["Name"].lower()):
        name = re.sub(r"[^a-z0-9]+", "-", dist.metadata["Name"].lower())
        body = dist.metadata.get_payload() or ""  # type: ignore[attr-defined]
        if len(body) > 2000:
            (into / f"{name}-README.md").write_text(body[:20000], encoding="utf-8")
            picked.append(into / f"{name}-README.md")
        for found in dist.files or ():
            if "licen" in found.name.lower() and found.name.lower().endswith(("", ".txt", ".md", ".rst")):
                text = Path(str(dist.locate_file(found))).read_text(encoding="utf-8", errors="replace")
                if len(text) > 1000 and len(picked) < count:
                    target = into / "licences" / f"{name}-{found.name}.txt"
                    target.parent.mkdir(exist_ok=True)
                    target.write_text(text, encoding="utf-8")
                    picked.append(target)
        if len(picked) >= count:
            break
    return picked


def test_over_a_synced_folder_of_real_documents_every_named_file_holds_its_excerpt(
    local_stack: RunningStack, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    owner = local_stack.token(f"cite-sync-{suffix}", name="Owner")
    kb = ok_json(local_stack, owner, "kb", "create", "Docs")["id"]
    folder = tmp_path / "docs"
    folder.mkdir()
    documents = real_documents(folder, 20)
    assert len(documents) >= 12
    env = {"MEMMY_KB_ENDPOINT": local_stack.api_url, "MEMMY_KB_TOKEN": owner, "MEMMY_KB_HOME": str(tmp_path / "h")}
    synced = subprocess.run(  # noqa: S603 - our own CLI
        [*CLI, "sync", str(folder), kb, "--yes"], capture_output=True, text=True, env={**_env(), **env}, timeout=180, check=False
    )
    assert synced.returncode == 0, synced.stderr
    wait_until(
        lambda: all(f["status"] == "available" for f in _all_files(local_stack, owner, kb)),
        timeout=120,
        message="the synced files to be processed",
    )
    texts = {str(p.relative_to(folder)): _words(p.read_text(encoding="utf-8")) for p in documents}
    named = excerpts = 0
    for path in documents[:12]:
        line = max(path.read_text(encoding="utf-8").splitlines(), key=len)[:200]
        for item in recall(local_stack, owner, line)["items"]:
            excerpts += 1
            for file in ([item["file"]] if item["file"] else []) + item["files"]:
                key = "/".join(filter(None, [file["folder_path"], file["name"]]))
                assert _holds(texts[key], item["content"]), (key, item["content"][:300])
                named += 1
    # Most excerpts name their document (the rest are text more files hold than a citation can list)
    assert named * 10 >= excerpts * 7, (named, excerpts)


def _env() -> dict[str, str]:
    """This process's environment without any MEMMY_KB_ setting of its own."""
    return {k: v for k, v in os.environ.items() if not k.startswith("MEMMY_KB_")}


def _all_files(stack: RunningStack, token: str, kb: str) -> list[dict[str, Any]]:
    root = ok_json(stack, token, "files", "ls", kb)
    found = list(root["files"])
    for sub in root.get("folders", []):
        found += ok_json(stack, token, "files", "ls", kb, "--folder", sub["id"])["files"]
    return found


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.casefold()))


def _holds(document: str, excerpt: str) -> bool:
    """Whether the document holds the excerpt: most of its runs of 6 words (every 6th) are in it."""
    words = _words(excerpt).split()
    runs = [" ".join(words[i : i + 6]) for i in range(0, max(len(words) - 5, 1), 6)]
    return sum(run in document for run in runs) * 10 >= len(runs) * 8

