"""``make load`` after the run: wait for the ingest to settle, then compare the server's lists and MemOS
with the model (each user's KBs, each live KB's members and files; what MemOS still holds)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from bench import load_oracle as oracle
from bench.load_model import Kb, Model, User
from bench.load_oracle_teams import team_changes
from bench.load_stack_handle import Stack


def _get(http: httpx.Client, path: str) -> Any:
    response = http.get(path)
    response.raise_for_status()
    return response.json()


def api_clients(stack: Stack, users: list[User]) -> dict[str, httpx.Client]:
    return {u.user_id: stack.client(stack.token(u.user_id)) for u in users}


def settle_ingest(clients: dict[str, httpx.Client], model: Model, timeout: float) -> bool:
    """Wait until no live KB has a stored upload still uploading or processing; False on timeout."""
    deadline = time.monotonic() + timeout
    while True:
        busy = False
        for kb in list(model.kbs.values()):
            if kb.deleted is not False:
                continue
            stored = {u.upload_id for u in kb.uploads.values() if u.stored}
            files = _get(clients[kb.owner], f"/knowledge-bases/{kb.kb_id}/files")["files"]
            if any(
                f["status"] in ("uploading", "processing") and f.get("upload_id") in stored for f in files
            ):
                busy = True
                break
        if not busy:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)


def check_final_lists(
    clients: dict[str, httpx.Client], users: list[User], model: Model
) -> tuple[list[oracle.Violation], dict[str, set[str]], int]:
    """The server's lists against the model: violations, live files by KB (upload ids), and how many
    (user, KB) pairs the model could not determine (an unknown outcome or an overlap)."""
    violations: list[oracle.Violation] = []
    undetermined = 0
    live = {kb_id: kb for kb_id, kb in model.kbs.items() if kb.deleted is False}
    uncertain = {kb_id for kb_id, kb in model.kbs.items() if kb.deleted is None}
    live_files: dict[str, set[str]] = {}
    # (user, KB) pairs a team may have given: the list's ``recall`` is then whether any way recalls it
    # (an owner's own KB too, when shared with a team of theirs), not the grant's setting alone.
    team_read = {(c.user, c.kb) for c in team_changes(model.team_events) if c.effect == "on"}
    for user in users:
        found, unsure = _check_kb_list(clients[user.user_id], user.user_id, model, live, uncertain, team_read)
        violations += found
        undetermined += unsure
    for kb_id, kb in live.items():
        owner = clients[kb.owner]
        violations += _check_members(owner, kb_id, kb, users, model)
        found, live_files[kb_id] = _check_files(owner, kb_id, kb, model)
        violations += found
    return violations, live_files, undetermined


def _check_kb_list(
    http: httpx.Client,
    me: str,
    model: Model,
    live: dict[str, Kb],
    uncertain: set[str],
    team_read: set[tuple[str, str]],
) -> tuple[list[oracle.Violation], int]:
    """One user's KB list (KB, role, recall setting) against the model: violations, and how many of the
    user's KBs the model could not determine."""
    violations: list[oracle.Violation] = []
    undetermined = 0
    listed = {item["id"]: item for item in _get(http, "/knowledge-bases")["items"]}
    expected: dict[str, tuple[str, bool]] = {}
    skip: set[str] = set(uncertain)
    for kb_id, kb in live.items():
        if kb.owner == me:
            setting = oracle.recall_setting_after(kb.created, model.toggles[(me, kb_id)])
            role = "owner"
        else:
            try:
                member = oracle.membership_after(model.shares[(me, kb_id)], model.removals[(me, kb_id)])
            except ValueError as error:
                violations.append(oracle.Violation("membership", f"{me} on {kb_id}: {error}"))
                skip.add(kb_id)
                continue
            if member is None:
                skip.add(kb_id)
                undetermined += 1
                continue
            if not member:
                continue
            last_share = max((o for o in model.shares[(me, kb_id)] if o.ok), key=lambda o: o.end)
            setting = oracle.recall_setting_after(last_share, model.toggles[(me, kb_id)])
            role = "reader"
        if setting is None:
            undetermined += 1
        expected[kb_id] = (
            role,
            bool(setting) if setting is not None else listed.get(kb_id, {}).get("recall"),
        )
    violations += oracle.compare_sets(
        "grant",
        f"{me}'s KB list (kb, role)",
        {(kb_id, role) for kb_id, (role, _) in expected.items()},
        # A KB read through a team (``teams`` not empty) is the team checks' (bench.load_checks_teams)
        # unless the model expects a grant too.
        {
            (kb_id, item["role"])
            for kb_id, item in listed.items()
            if kb_id not in skip and (kb_id in expected or not item.get("teams"))
        },
    )
    model.final_counts["grants"] += len(expected)
    for kb_id, (_, setting) in expected.items():
        if kb_id in listed and (me, kb_id) not in team_read and listed[kb_id]["recall"] != setting:
            violations.append(
                oracle.Violation(
                    "recall-setting",
                    f"{me} on {kb_id}: recall {listed[kb_id]['recall']}, the model says {setting}",
                )
            )
    return violations, undetermined


def _check_members(
    owner: httpx.Client, kb_id: str, kb: Kb, users: list[User], model: Model
) -> list[oracle.Violation]:
    """A live KB's member list against the readers the model is sure of."""
    members = {m["user_id"] for m in _get(owner, f"/knowledge-bases/{kb_id}/members")["items"]}
    readers: set[str] = {kb.owner}
    unknown: set[str] = set()
    for user in users:
        if user.user_id == kb.owner:
            continue
        try:
            member = oracle.membership_after(
                model.shares[(user.user_id, kb_id)], model.removals[(user.user_id, kb_id)]
            )
        except ValueError:
            member = None
        if member is None:
            unknown.add(user.user_id)
        elif member:
            readers.add(user.user_id)
    model.final_counts["members"] += len(readers)
    model.final_counts["live KBs"] += 1
    return oracle.compare_sets("member", f"members of {kb_id}", readers, members - unknown)


def _check_files(
    owner: httpx.Client, kb_id: str, kb: Kb, model: Model
) -> tuple[list[oracle.Violation], set[str]]:
    """A live KB's file list against its stored uploads: violations, and the upload ids of its files."""
    files = _get(owner, f"/knowledge-bases/{kb_id}/files")["files"]
    listed_uploads = {f.get("upload_id"): f for f in files}
    unsure = {u.upload_id for u in kb.uploads.values() if u.deleted is None}
    want = {u.upload_id for u in kb.uploads.values() if u.stored and u.deleted is False}
    never_posted = {u.upload_id for u in kb.uploads.values() if not u.stored}
    violations = oracle.compare_sets(
        "file", f"files of {kb_id}", want, set(listed_uploads) - never_posted - unsure
    )
    for upload_id in want & set(listed_uploads):
        status = listed_uploads[upload_id]["status"]
        if status != "available":
            reason = listed_uploads[upload_id].get("reason")
            violations.append(
                oracle.Violation("file-not-available", f"{kb_id}: {upload_id} is {status} ({reason})")
            )
    model.final_counts["files"] += len(want)
    uploads = {str(f["upload_id"]) for f in files if f["id"].startswith("fi_") and f.get("upload_id")}
    return violations, uploads


def check_residue(
    stack: Stack, live_files: dict[str, set[str]], timeout: float
) -> tuple[list[oracle.Violation], int]:
    """Run the reconciler, then wait for MemOS to hold exactly the live KBs and files; the last
    comparison's violations and how many reconciler runs it took."""
    deadline = time.monotonic() + timeout
    runs = 0
    while True:
        reply = stack.reconcile()
        runs += 1
        if "errorType" in reply:
            return [oracle.Violation("reconcile", f"the reconciler failed: {reply}")], runs
        violations = oracle.memos_residue(stack.memos_state(), live_files)
        if not violations or time.monotonic() > deadline:
            return violations, runs
        time.sleep(2)
