"""``desktop links`` in the page's words (static/text-sync.js): the KB by its name, a paused pass as not done
("would delete N — waiting for your confirmation", with the first names), a missing folder's advice
starting with reconnecting or unlinking, and a link whose KB is gone saying so and how to re-point it."""

from __future__ import annotations

from typing import Any

from memmy_kb_client.cli.link_commands import link_lines
from memmy_kb_client.sync.plan import Plan, Step
from memmy_kb_client.sync.run import PassResult


def paused_record(paths: list[str], reason: str) -> dict[str, Any]:
    """What a pass that stopped for ``reason`` before deleting ``paths`` records (``PassResult.record``)."""
    plan = Plan(deletes=[Step("delete", p, file_id=f"fi_{i}") for i, p in enumerate(paths)], confirm=reason)
    return PassResult(plan, None, reason, 1, 0).record()


def test_a_paused_pass_reads_as_not_done_with_the_kbs_name_and_the_first_names() -> None:
    # Given a link paused before deleting 22 of 30 files
    reason = "it would delete 22 of the 30 files this folder's sync brought in"
    names = [f"notes/{n:02}.md" for n in range(22, 0, -1)]
    link = {"dir": "/docs", "kb_id": "kb_1", "state": "paused", "paused": reason, "last_pass_at": 1.0}
    link["last"] = paused_record(names, reason)

    # When it is listed
    [line] = link_lines([link], {"kb_1": "Handbook"})

    # Then the KB by name, the page's sentence, what is waiting (not "delete 22") and the first five names
    assert line.startswith(f"/docs -> “Handbook”: Paused: {reason}. Nothing is deleted until you confirm.")
    assert "would delete 22 — waiting for your confirmation" in line
    assert "(first: notes/01.md, notes/02.md, notes/03.md, notes/04.md, notes/05.md…)" in line
    assert "last sync" not in line
    assert "(delete 22" not in line
    assert "desktop confirm /docs" in line


def test_a_missing_folders_first_advice_is_to_reconnect_or_unlink_it() -> None:
    reason = "the folder is missing (an unmounted disk?)"
    link = {"dir": "/mnt/usb/docs", "kb_id": "kb_1", "state": "paused", "paused": reason}
    link["last"] = paused_record(["a.md", "b.md", "c.md", "d.md"], reason)

    [line] = link_lines([link], {"kb_1": "Handbook"})

    assert "would delete 4 — waiting for your confirmation (first: a.md, b.md, c.md, d.md)" in line
    advice = line.split("waiting for your confirmation", 1)[1]
    assert advice.index("reconnect the disk") < advice.index("desktop unlink /mnt/usb/docs")
    assert advice.index("desktop unlink /mnt/usb/docs") < advice.index("desktop confirm /mnt/usb/docs")


def test_a_link_whose_knowledge_base_is_gone_says_so_and_how_to_point_it_elsewhere() -> None:
    link = {
        "dir": "/docs",
        "kb_id": "kb_gone",
        "state": "error",
        "error": "Knowledge base not found. (404 kb_not_found)",
    }

    [line] = link_lines([link], {"kb_1": "Handbook"})

    assert line.startswith("/docs -> kb_gone: Its knowledge base is gone: link the folder to another")
    assert "desktop relink /docs KB" in line
    # Without the KBs' names (the cloud not read), nothing is claimed gone: the error as it is
    [unknown] = link_lines([link])
    assert unknown == "/docs -> kb_gone: Error: Knowledge base not found. (404 kb_not_found)"


def test_an_up_to_date_link_names_its_last_sync_and_what_it_did() -> None:
    link = {"dir": "/docs", "kb_id": "kb_1", "state": "idle", "last_pass_at": 0.0}
    assert link_lines([link], {"kb_1": "Handbook"}) == ["/docs -> “Handbook”: Up to date"]
    link.update(last_pass_at=3600.0, last={"counts": {"upload": 2, "delete": 0}})
    [line] = link_lines([link], {"kb_1": "Handbook"})
    assert line.startswith("/docs -> “Handbook”: Up to date · last sync ")
    assert line.endswith(" (upload 2)")
