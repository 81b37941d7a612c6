"""Seeds for the schema-driven fuzz of the local stack, its schemathesis configuration, and its tally.

Ids the fuzzer makes up match nothing, so without seeds most operations only ever answer 404 or 422.
``seed_fuzz_targets`` creates, through the API, what the fuzzing user can reach: a KB it owns with folders,
a file and a reader, a KB another user shares with it, and separate KBs, folders and files for the
operations that delete (so that deleting never removes what the other operations use).
``schemathesis_config`` hands those ids to schemathesis as dictionaries bound to the path parameters and
body fields that take them (schemathesis draws a bound value with the binding's probability and
generates one otherwise, so made-up ids are still tried). ``successes_by_operation`` counts, from the
run's HAR report, the requests of each documented operation and those answered 2xx.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx

from tests.support.polling import wait_until
from tests.support.stack import RunningStack

FUZZ_USER = "fuzzer"
# How often a bound parameter takes a seeded value rather than a generated one.
ID_PROBABILITY = 0.85
BODY_PROBABILITY = 0.6
SEED_TIMEOUT_SECONDS = 30
FILENAMES = ("notes.md", "报告.pdf", "data.json", "readme.txt", "spec.docx")
DISPOSABLE_KBS = 4
# Registered accounts that are nobody's member yet: each can be shared with once (201), then 409.
NEWCOMERS = 6
SCRATCH_FOLDERS = 4
SCRATCH_FILES = 2


@dataclass
class FuzzSeeds:
    """What the fuzzing user can reach, by the dictionary each list becomes."""

    token: str
    # The KB it owns, then the one it reads.
    kb_ids: list[str] = field(default_factory=list)
    folder_ids: list[str] = field(default_factory=list)
    file_ids: list[str] = field(default_factory=list)
    # Other users: ids to revoke, and what the owner may share by (ids, emails, a phone).
    user_ids: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    # Only for the operations that delete.
    disposable_kb_ids: list[str] = field(default_factory=list)
    scratch_kb_ids: list[str] = field(default_factory=list)
    scratch_folder_ids: list[str] = field(default_factory=list)
    scratch_file_ids: list[str] = field(default_factory=list)

    def dictionaries(self) -> dict[str, list[str]]:
        return {
            "kb_ids": self.kb_ids,
            "folder_ids": self.folder_ids,
            "file_ids": self.file_ids,
            "user_ids": self.user_ids,
            "identifiers": self.identifiers,
            "filenames": list(FILENAMES),
            "disposable_kb_ids": self.disposable_kb_ids,
            "scratch_kb_ids": self.scratch_kb_ids,
            "scratch_folder_ids": self.scratch_folder_ids,
            "scratch_file_ids": self.scratch_file_ids,
        }


class _Api:
    """One user's calls; every answer must be the expected status."""

    def __init__(self, stack: RunningStack, token: str) -> None:
        self.http = httpx.Client(
            base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )

    def call(self, method: str, path: str, expected: int, body: Any = None) -> Any:
        reply = self.http.request(method, path, json=body)
        assert reply.status_code == expected, f"{method} {path}: {reply.status_code} {reply.text}"
        return reply.json() if reply.content else None

    def kb(self, name: str) -> str:
        return str(self.call("POST", "/knowledge-bases", HTTPStatus.CREATED, {"name": name})["id"])

    def folder(self, kb_id: str, name: str, parent_id: str | None = None) -> str:
        body = {"name": name, "parent_id": parent_id}
        created = self.call("POST", f"/knowledge-bases/{kb_id}/folders", HTTPStatus.CREATED, body)
        return str(created["id"])

    def upload(self, kb_id: str, filename: str, data: bytes) -> None:
        """A presigned POST straight to moto's S3, as a client does; the ingest runs in the background."""
        body = {"filename": filename, "size_bytes": len(data)}
        ticket = self.call("POST", f"/knowledge-bases/{kb_id}/uploads", HTTPStatus.CREATED, body)
        sent = httpx.post(
            ticket["url"],
            data=ticket["fields"],
            files={"file": (filename, data, "text/markdown")},
            timeout=30,
        )
        assert sent.status_code == HTTPStatus.NO_CONTENT, sent.text

    def file_ids(self, kb_id: str, count: int) -> list[str]:
        """The ids of the KB's root files once ``count`` of them are recorded (MemOS may still process)."""
        def recorded() -> list[str] | None:
            files = self.call("GET", f"/knowledge-bases/{kb_id}/files", HTTPStatus.OK)["files"]
            ids = [f["id"] for f in files if f["status"] in ("processing", "available")]
            return ids if len(ids) >= count else None

        return wait_until(
            recorded, timeout=SEED_TIMEOUT_SECONDS, interval=0.1, message=f"{count} files of {kb_id} recorded"
        )

    def close(self) -> None:
        self.http.close()


def seed_fuzz_targets(stack: RunningStack) -> FuzzSeeds:
    """Create the fuzzing user's world through the API (about a second); the ids to fuzz with."""
    suffix = uuid.uuid4().hex[:6]
    colleague, third, fourth = f"colleague-{suffix}", f"third-{suffix}", f"fourth-{suffix}"
    tokens = {
        FUZZ_USER: stack.token(FUZZ_USER, name="Fuzzer", email="fuzzer@example.com"),
        colleague: stack.token(colleague, name="Colleague", email=f"{colleague}@example.com"),
        third: stack.token(third, name="Third", email=f"{third}@example.com", phone="+8613800138000"),
        fourth: stack.token(fourth, name="Fourth"),
    }
    newcomers = [f"newcomer-{i}-{suffix}" for i in range(NEWCOMERS)]
    tokens.update((user, stack.token(user, name=f"Newcomer {i}")) for i, user in enumerate(newcomers))
    apis = {user: _Api(stack, token) for user, token in tokens.items()}
    try:
        with ThreadPoolExecutor(max_workers=4) as executor:  # registered, so that sharing can find them
            list(executor.map(lambda api: api.call("PUT", "/me", HTTPStatus.OK), apis.values()))
        me, them = apis[FUZZ_USER], apis[colleague]
        seeds = FuzzSeeds(token=tokens[FUZZ_USER])

        main = me.kb("Fuzz main")
        outer = me.folder(main, "Outer")
        seeds.folder_ids = [outer, me.folder(main, "Inner", outer), me.folder(main, "Other")]
        scratch = me.kb("Fuzz scratch")
        seeds.scratch_kb_ids = [scratch]
        seeds.scratch_folder_ids = [me.folder(scratch, f"Scratch {i}") for i in range(SCRATCH_FOLDERS)]
        me.upload(main, "notes.md", b"# Notes\n\nSeeded for the fuzz.\n")
        for i in range(SCRATCH_FILES):
            me.upload(scratch, f"scratch-{i}.md", f"# Scratch {i}\n".encode())
        seeds.disposable_kb_ids = [me.kb(f"Fuzz disposable {i}") for i in range(DISPOSABLE_KBS)]
        for kb_id in seeds.disposable_kb_ids[::2]:  # with a reader and without
            me.call("POST", f"/knowledge-bases/{kb_id}/members", HTTPStatus.CREATED, {"identifier": fourth})
        me.call("POST", f"/knowledge-bases/{main}/members", HTTPStatus.CREATED, {"identifier": colleague})
        theirs = them.kb("Colleague's")
        them.call("POST", f"/knowledge-bases/{theirs}/members", HTTPStatus.CREATED, {"identifier": FUZZ_USER})
        seeds.kb_ids = [main, theirs]
        seeds.user_ids = [colleague, third, fourth, *newcomers]
        # Mostly accounts that are not members yet: the first share of each is a 201.
        seeds.identifiers = [third, f"{third}@example.com", "+8613800138000", fourth, colleague, *newcomers]
        seeds.file_ids = me.file_ids(main, 1)
        seeds.scratch_file_ids = me.file_ids(scratch, SCRATCH_FILES)
        return seeds
    finally:
        for api in apis.values():
            api.close()


# ------------------------------------------------------------------------------------------ config


def _toml(value: Any) -> str:
    """A TOML value: JSON's strings, numbers and arrays are TOML's too; tables are written inline."""
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{json.dumps(key)} = {_toml(item)}" for key, item in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    return json.dumps(value)


def _bound(dictionary: str, probability: float = ID_PROBABILITY) -> dict[str, Any]:
    return {"dictionary": dictionary, "probability": probability}


def operations(schema: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(method, path, operationId) of every documented operation."""
    return [
        (method.upper(), path, str(operation.get("operationId", f"{method} {path}")))
        for path, item in schema["paths"].items()
        for method, operation in item.items()
    ]


def schemathesis_config(schema: Mapping[str, Any], seeds: FuzzSeeds) -> str:
    """A ``schemathesis.toml``: the seeds as dictionaries, bound to the parameters that take them.

    Operations that delete a KB, a folder or a file draw their ids from KBs, folders and files kept for
    them, whichever order schemathesis runs the operations in.
    """
    lines = [
        f"[dictionaries.{name}]\nvalues = {_toml(values)}\n" for name, values in seeds.dictionaries().items()
    ]
    everywhere = {
        "path.kb_id": _bound("kb_ids"),
        "path.folder_id": _bound("folder_ids"),
        "path.file_id": _bound("file_ids"),
        "path.user_id": _bound("user_ids"),
        "query.folder_id": _bound("folder_ids", BODY_PROBABILITY),
        "body.folder_id": _bound("folder_ids", BODY_PROBABILITY),
        "body.parent_id": _bound("folder_ids", BODY_PROBABILITY),
        "body.identifier": _bound("identifiers", BODY_PROBABILITY),
        "body.filename": _bound("filenames", BODY_PROBABILITY),
    }
    lines.append("[parameters]\n" + "".join(f"{json.dumps(k)} = {_toml(v)}\n" for k, v in everywhere.items()))
    for method, path, operation_id in operations(schema):
        if method != "DELETE" or path.endswith("/members/{user_id}"):
            continue  # revoking deletes only a grant, and sharing (POST .../members) makes it again
        if path == "/knowledge-bases/{kb_id}":
            parameters = {"path.kb_id": _bound("disposable_kb_ids")}
        else:
            parameters = {
                "path.kb_id": _bound("scratch_kb_ids"),
                "path.folder_id": _bound("scratch_folder_ids"),
                "path.file_id": _bound("scratch_file_ids"),
            }
        lines.append(
            f"[[operations]]\ninclude-operation-id = {json.dumps(operation_id)}\nparameters = {_toml(parameters)}\n"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------- tally


def successes_by_operation(har_path: Path, schema: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """``"METHOD /path"`` -> (requests answered 2xx, requests) for every documented operation."""
    matchers = [
        (method, path, re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$"))
        for method, path, _ in operations(schema)
    ]
    tally = {f"{method} {path}": (0, 0) for method, path, _ in matchers}
    for entry in json.loads(har_path.read_text())["log"]["entries"]:
        method = entry["request"]["method"]
        target = httpx.URL(entry["request"]["url"]).raw_path.decode().split("?", 1)[0]
        for candidate, path, pattern in matchers:
            if candidate == method and pattern.match(target):
                ok, total = tally[f"{method} {path}"]
                tally[f"{method} {path}"] = (ok + (200 <= entry["response"]["status"] < 300), total + 1)
                break
    return tally


def media_types_sent(har_path: Path) -> set[str]:
    """The ``Content-Type`` of every request in the run's HAR report that carried one."""
    return {
        header["value"]
        for entry in json.loads(har_path.read_text())["log"]["entries"]
        for header in entry["request"]["headers"]
        if header["name"].lower() == "content-type"
    }


def format_tally(tally: Mapping[str, tuple[int, int]]) -> str:
    width = max(map(len, tally), default=0)
    rows: Iterable[str] = (
        f"  {name:<{width}}  {ok:>4} / {total:<4} 2xx" for name, (ok, total) in sorted(tally.items())
    )
    return "\n".join(rows)
