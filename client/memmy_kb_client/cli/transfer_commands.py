"""``memmy-kb files upload`` and ``files replace``: bytes sent straight to storage with a presigned POST,
then, with ``--wait``, the listing watched until MemOS has processed them."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memmy_kb_client.cli.entries import KB_HELP, OWN, NotResolved, kb_named, resolve
from memmy_kb_client.cli.local_files import check_local_files, check_replacement_format
from memmy_kb_client.cli.rendering import bar_name_columns, progress_bar
from memmy_kb_client.cli.terminal import one_line, printable
from memmy_kb_client.cli.upload_names import (
    NAME_TAKEN,
    NameTaken,
    free_name,
    names_in,
    names_to_send,
    same_name_key,
    taken_sentence,
)

if TYPE_CHECKING:
    from memmy_kb_client.cli.cloud_route import RoutedClient
    from memmy_kb_client.replies import File, ReplacementAnswer, ReplacementTicket, UploadTicket
    from memmy_kb_client.sdk import MemmyClient


def client_for(args: argparse.Namespace) -> RoutedClient:
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
    upload.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    upload.add_argument("paths", nargs="+", metavar="PATH")
    upload.add_argument(
        "--folder", help="the folder to upload into: its id, unique name or path of names (default: the root)"
    )
    upload.add_argument(
        "--keep-both",
        action="store_true",
        help="when a file of the same name is in the folder, upload this one under a free name "
        "(name (2).md) instead of refusing",
    )
    upload.add_argument("--wait", action="store_true", help="wait until each file is available or failed")
    upload.add_argument("--timeout", type=float, default=600, help="seconds to wait at most (with --wait)")
    upload.set_defaults(func=upload_files)
    replace = files.add_parser(
        "replace",
        parents=[common],
        help="replace a file's content in place (owner): same id, name, folder and sharing; its next version",
    )
    replace.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    replace.add_argument(
        "file", help="the file's id, its name if no other file has it, or its path of names (产品/价目表.md)"
    )
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
    """Upload files (bytes go straight to storage), then optionally wait until each is processed: each
    file's state is told as it changes (on stderr while in flight; on stdout once available or failed).
    With ``--json``, stdout is one JSON list: each file as the listing shows it."""
    from memmy_kb_client.sdk import MemmyApiError

    given_kb = args.kb
    try:
        check_local_files(args.paths)  # before the cloud is asked anything
        with client_for(args) as client:
            args.kb = kb_named(client, args.kb, owned=True)  # the ids, for the uploads and the listings
            where = "the root"
            if args.folder is not None:
                folder = resolve(client, args.kb, "folders", args.folder)
                args.folder, where = folder.id, folder.label
            taken = _names_there(client, args)
            names = names_to_send(
                [Path(raw).name for raw in args.paths],
                taken,
                keep_both=args.keep_both,
                kb=given_kb,
                where=where,
            )
            uploads: dict[str, str] = {}
            name_columns = bar_name_columns(names)
            for raw, name in zip(args.paths, names, strict=True):
                ticket = _upload_one(client, args, Path(raw), name, name_columns, (given_kb, where))
                uploads[ticket["upload_id"]] = name
            seen = _watch(client, args, uploads) if args.wait else {}
            if args.json and not args.wait:
                seen = {str(f["upload_id"]): f for f in _listed(client, args, uploads)}
    except (MemmyApiError, OSError, NotResolved) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    if args.json:
        shown = [
            seen.get(u) or {"upload_id": u, "name": n, "status": "uploading"} for u, n in uploads.items()
        ]
        print(printable(json.dumps(shown, ensure_ascii=False, indent=2)))
    else:
        for upload_id, name in uploads.items():
            if not args.wait:
                print(printable(_state_line("uploaded", name)))
            elif not _finished(seen.get(upload_id)):
                print(printable(_state_line("still processing", name)))
    return 1 if any(f["status"] == "failed" for f in seen.values()) else 0


def _names_there(client: MemmyClient, args: argparse.Namespace) -> dict[str, str]:
    """The names in the target folder (``names_in``); none when the service cannot list them just then
    (5xx): its own 409 ``name_taken`` still refuses a name taken."""
    from memmy_kb_client.sdk import MemmyApiError

    try:
        return names_in(client.list_files(args.kb, args.folder))
    except MemmyApiError as err:
        if err.status < 500:
            raise
        return {}


def _upload_one(
    client: MemmyClient, args: argparse.Namespace, path: Path, name: str, columns: int, said: tuple[str, str]
) -> UploadTicket:
    """One file sent under ``name``. A 409 ``name_taken`` (a file of that name arrived since the listing
    was read) is ``NameTaken`` with the listing's sentence; with ``--keep-both`` the next free name is
    asked for instead, a few times at most."""
    from memmy_kb_client.sdk import MemmyApiError

    for _ in range(3):
        try:
            return client.upload_file(
                args.kb, path, folder_id=args.folder, progress=progress_bar(name, columns), name=name
            )
        except MemmyApiError as err:
            if err.code != NAME_TAKEN:
                raise
            taken = _names_there(client, args)
            if not args.keep_both:
                raise NameTaken(taken_sentence(name, taken.get(same_name_key(name), ""), *said)) from None
            name = free_name(name, taken)
    raise NameTaken(f"'{one_line(name)}': the service refused every free name tried; upload it again")


_FINAL = ("available", "failed")


def _finished(entry: File | None) -> bool:
    return entry is not None and entry["status"] in _FINAL


def _state_line(state: str, name: str, reason: str | None = None) -> str:
    said = f"  ({one_line(reason)})" if reason else ""
    return f"{state:<16}  {one_line(name)}{said}"


def _listed(client: MemmyClient, args: argparse.Namespace, uploads: dict[str, str]) -> list[File]:
    """The listing's entries of these uploads (a file, or the upload still in flight)."""
    listing = client.list_files(args.kb, args.folder)
    return [f for f in listing["files"] if f.get("upload_id") in uploads]


def _watch(client: MemmyClient, args: argparse.Namespace, uploads: dict[str, str]) -> dict[str, File]:
    """Each upload's entry once available or failed (or as last seen, at the timeout), its state told
    once per change: in flight on stderr, finished on stdout (on stderr too with --json: stdout is the
    JSON alone)."""
    seen: dict[str, File] = {}
    deadline = time.monotonic() + args.timeout
    while True:
        listing = client.list_files(args.kb, args.folder)
        for entry in listing["files"]:
            upload_id = entry.get("upload_id")
            if upload_id is None or upload_id not in uploads or _finished(seen.get(upload_id)):
                continue
            before = seen.get(upload_id)
            seen[upload_id] = entry
            if before is None or before["status"] != entry["status"]:
                line = printable(_state_line(entry["status"], uploads[upload_id], entry.get("reason")))
                result = _finished(entry) and not args.json
                print(line, file=sys.stdout if result else sys.stderr, flush=True)
        if all(_finished(seen.get(u)) for u in uploads) or time.monotonic() >= deadline:
            return seen
        time.sleep(listing.get("refresh_after_seconds") or 1)


def replace_file(args: argparse.Namespace) -> int:
    """Replace one file's content: ``unchanged`` when the bytes are its current version's (nothing sent);
    else the bytes go to storage and, with ``--wait``, the command waits for the new version to be
    available (or failed: the previous version then still answers)."""
    from memmy_kb_client.sdk import MemmyApiError

    path = Path(args.path)
    given_kb = args.kb
    try:
        check_local_files([args.path], replacing=True)  # before the cloud is asked anything
        with client_for(args) as client:
            args.kb = kb_named(client, args.kb, owned=True)
            entry = resolve(client, args.kb, "files", args.file)
            check_replacement_format(args.path, entry.name, given_kb, entry.label)  # before anything is sent
            args.file = entry.id  # the id, for the replace and the wait
            answer = client.replace_file(
                args.kb, args.file, path, if_version=args.if_version, progress=progress_bar(path.name)
            )
            final = (
                _wait_for_version(client, args, answer)
                if args.wait and answer["status"] == "issued"
                else None
            )
    except (MemmyApiError, OSError, NotResolved) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    if args.json:
        print(printable(json.dumps(final or answer, ensure_ascii=False, indent=2)))
    else:
        print(printable(_replace_line(args, answer, final)))
    failed = final is not None and (
        final["status"] == "failed" or (answer["status"] == "issued" and _replace_failed(final, answer))
    )
    return 1 if failed else 0


def _replace_failed(entry: File, ticket: ReplacementTicket) -> bool:
    """Whether the file shows this replace failed (it kept its version)."""
    replacement = entry.get("replacement")
    return bool(
        replacement and replacement.get("upload_id") == ticket["upload_id"] and replacement.get("status") == "failed"
    )


def _wait_for_version(client: MemmyClient, args: argparse.Namespace, ticket: ReplacementTicket) -> File | None:
    """The file once its new version is available or failed, or its replace failed; None on timeout."""
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        entry = client.get_file(args.kb, args.file)
        if _replace_failed(entry, ticket):
            return entry
        if (entry.get("version") or 0) > ticket["replaces_version"] and entry["status"] in (
            "available",
            "failed",
        ):
            return entry
        time.sleep(1)
    return None


def _replace_line(args: argparse.Namespace, answer: ReplacementAnswer, final: File | None) -> str:
    if answer["status"] == "unchanged":
        return f"unchanged         {args.file}  (already version {answer['version']})"
    if final is None:
        state = "still processing" if args.wait else "sent"
        return f"{state:<16}  {args.file}  (replacing version {answer['replaces_version']})"
    if _replace_failed(final, answer):
        replacement = final.get("replacement")
        reason = one_line((replacement.get("reason") if replacement else None) or "")
        return f"{'failed':<16}  {args.file}  ({reason}; version {final['version']} kept)"
    reason = f"  ({one_line(final['reason'])})" if final.get("reason") else ""
    return (
        f"{final['status']:<16}  {args.file}  version {final['version']}  {one_line(final['name'])}{reason}"
    )
