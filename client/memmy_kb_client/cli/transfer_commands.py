"""``memmy-kb files upload`` and ``files replace``: bytes sent straight to storage with a presigned POST,
then, with ``--wait``, the listing watched until MemOS has processed them."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from memmy_kb_client.cli.rendering import progress_bar
from memmy_kb_client.cli.terminal import one_line, printable


def client_for(args: argparse.Namespace) -> Any:
    """The SDK's client for the command's ``--endpoint`` and ``--token``: those, the signed-in desktop
    service, or the saved login, in the order ``cloud_route`` says."""
    from memmy_kb_client.cli.cloud_route import client_for as routed

    return routed(args.endpoint, args.token)


def add_transfer_commands(
    files: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """``files upload`` and ``files replace`` on the ``files`` group (``common``: the shared options)."""
    upload = files.add_parser(
        "upload", parents=[common], help="upload files (owner); bytes go straight to storage"
    )
    upload.add_argument("kb")
    upload.add_argument("paths", nargs="+", metavar="PATH")
    upload.add_argument("--folder", help="folder id to upload into (default: the root)")
    upload.add_argument("--wait", action="store_true", help="wait until each file is available or failed")
    upload.add_argument("--timeout", type=float, default=600, help="seconds to wait at most (with --wait)")
    upload.set_defaults(func=upload_files)
    replace = files.add_parser(
        "replace",
        parents=[common],
        help="replace a file's content in place (owner): same id, name, folder and sharing; its next version",
    )
    replace.add_argument("kb")
    replace.add_argument("file", help="the file's id (in `files ls`)")
    replace.add_argument("path", metavar="PATH", help="the new content (the file keeps its own name)")
    replace.add_argument(
        "--if-version",
        type=int,
        help="replace only if the file is still at this version (`files ls` shows it)",
    )
    replace.add_argument(
        "--wait", action="store_true", help="wait until the new version is available or failed"
    )
    replace.add_argument("--timeout", type=float, default=600, help="seconds to wait at most (with --wait)")
    replace.set_defaults(func=replace_file)


def upload_files(args: argparse.Namespace) -> int:
    """Upload files (bytes go straight to storage), then optionally wait until each is processed."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        with client_for(args) as client:
            uploads = {}
            for raw in args.paths:
                path = Path(raw)
                ticket = client.upload_file(
                    args.kb, path, folder_id=args.folder, progress=progress_bar(path.name)
                )
                uploads[ticket["upload_id"]] = path.name
            final: dict[str, dict[str, Any]] = {}
            deadline = time.monotonic() + args.timeout
            while args.wait and len(final) < len(uploads) and time.monotonic() < deadline:
                listing = client.list_files(args.kb, args.folder)
                for f in listing["files"]:
                    if f.get("upload_id") in uploads and f["status"] in ("available", "failed"):
                        final[f["upload_id"]] = f
                if len(final) < len(uploads):
                    time.sleep(listing.get("refresh_after_seconds") or 1)
    except (MemmyApiError, OSError) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    for upload_id, name in uploads.items():
        f = final.get(upload_id)
        status = f["status"] if f else ("uploaded" if not args.wait else "still processing")
        reason = f"  ({one_line(f['reason'])})" if f and f.get("reason") else ""
        print(printable(f"{status:<16}  {one_line(name)}{reason}"))
    return 1 if any(f["status"] == "failed" for f in final.values()) else 0


def replace_file(args: argparse.Namespace) -> int:
    """Replace one file's content: ``unchanged`` when the bytes are its current version's (nothing sent);
    else the bytes go to storage and, with ``--wait``, the command waits for the new version to be
    available (or failed: the previous version then still answers)."""
    from memmy_kb_client.sdk import MemmyApiError

    path = Path(args.path)
    try:
        with client_for(args) as client:
            answer = client.replace_file(
                args.kb, args.file, path, if_version=args.if_version, progress=progress_bar(path.name)
            )
            final = (
                _wait_for_version(client, args, answer)
                if args.wait and answer["status"] == "issued"
                else None
            )
    except (MemmyApiError, OSError) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    if args.json:
        print(printable(json.dumps(final or answer, ensure_ascii=False, indent=2)))
    else:
        print(printable(_replace_line(args, answer, final)))
    return 1 if final is not None and (final["status"] == "failed" or _replace_failed(final, answer)) else 0


def _replace_failed(entry: dict[str, Any], ticket: dict[str, Any]) -> bool:
    """Whether the file shows this replace failed (it kept its version)."""
    replacement = entry.get("replacement") or {}
    return bool(replacement.get("upload_id") == ticket["upload_id"] and replacement.get("status") == "failed")


def _wait_for_version(client: Any, args: argparse.Namespace, ticket: dict[str, Any]) -> dict[str, Any] | None:
    """The file once its new version is available or failed, or its replace failed; None on timeout."""
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        entry: dict[str, Any] = client.get_file(args.kb, args.file)
        if _replace_failed(entry, ticket):
            return entry
        if (entry.get("version") or 0) > ticket["replaces_version"] and entry["status"] in (
            "available",
            "failed",
        ):
            return entry
        time.sleep(1)
    return None


def _replace_line(args: argparse.Namespace, answer: dict[str, Any], final: dict[str, Any] | None) -> str:
    if answer["status"] == "unchanged":
        return f"unchanged         {args.file}  (already version {answer['version']})"
    if final is None:
        state = "still processing" if args.wait else "sent"
        return f"{state:<16}  {args.file}  (replacing version {answer['replaces_version']})"
    if _replace_failed(final, answer):
        reason = one_line(final["replacement"].get("reason") or "")
        return f"{'failed':<16}  {args.file}  ({reason}; version {final['version']} kept)"
    reason = f"  ({one_line(final['reason'])})" if final.get("reason") else ""
    return (
        f"{final['status']:<16}  {args.file}  version {final['version']}  {one_line(final['name'])}{reason}"
    )
