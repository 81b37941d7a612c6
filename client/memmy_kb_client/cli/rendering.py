"""What the ``kb``, ``files`` and ``folders`` commands print for people (``--json`` prints the API's JSON
instead), and the upload's progress bar on stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from memmy_kb_client.cli.terminal import one_line


def kb_line(kb: dict[str, Any]) -> str:
    recall = "recall on " if kb["recall"] else "recall off"
    return f"{kb['id']}  {recall}  {one_line(kb['name'])}"


def render_list(kbs: list[dict[str, Any]]) -> str:
    owned = [kb for kb in kbs if kb["role"] == "owner"]
    shared = [kb for kb in kbs if kb["role"] != "owner"]
    lines = ["My knowledge bases:"] + ([f"  {kb_line(kb)}" for kb in owned] or ["  (none)"])
    if shared:
        lines.append("Shared with me:")
        lines += [f"  {kb_line(kb)}  (from {_sharer(kb['owner'])})" for kb in shared]
    return "\n".join(lines)


def _sharer(owner: dict[str, Any]) -> str:
    """Who shared a KB: the display name, and the masked verified contact so a name alone cannot pose as
    someone else (as the page and ``recall`` show it)."""
    contact = f", {one_line(owner['contact'])}" if owner.get("contact") else ""
    return f"{one_line(owner['display_name'])}{contact}"


def render_members(members: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m['user_id']}  {m['role']:<6}  {one_line(m['display_name'])}" for m in members)


def render_listing(listing: dict[str, Any]) -> str:
    lines = [f"[folder] {f['id']}  {one_line(f['name'])}" for f in listing["folders"]]
    for f in listing["files"]:
        reason = f"  ({one_line(f['reason'])})" if f.get("reason") else ""
        version = f"v{f['version']}" if f.get("version") else "-"
        lines.append(
            f"{f['status']:<10}  {f['id']}  {version:<4}  {one_line(f['name'])}{reason}{_replacement(f)}"
        )
    if listing.get("refresh_after_seconds"):
        lines.append(f"(still processing: look again in {listing['refresh_after_seconds']} s)")
    return "\n".join(lines) or "(empty)"


def _replacement(file: dict[str, Any]) -> str:
    """A replace beside its file: in flight, or failed with its reason (the file keeps its version)."""
    replacement = file.get("replacement")
    if not replacement:
        return ""
    if replacement["status"] == "failed":
        return f"  [replace {replacement['upload_id']} failed: {one_line(replacement.get('reason') or '')}]"
    return f"  [being replaced by {replacement['upload_id']}]"


def progress_bar(name: str) -> Callable[[int, int], None]:
    def show(sent: int, total: int) -> None:
        done = sent / total if total else 1.0
        bar = "#" * int(done * 30)
        print(
            f"\r{one_line(name)[:40]:<40} [{bar:<30}] {done:4.0%}",
            end="" if sent < total else "\n",
            file=sys.stderr,
            flush=True,
        )

    return show
