"""The desktop service's two routes for ``memmy-kb mcp`` (``desktop/mcp_routes.py``), asked by the MCP
server's own client (``mcp_service.LocalService``) with the hook token, in front of a fake cloud that
answers ``GET /knowledge-bases`` and ``POST /recall`` as the cloud does (422 for an id outside the scope)."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NotRequired

import anyio
import pytest

from memmy_kb_client import replies
from memmy_kb_client.agents.mcp_service import LocalService, ToolRefused, resolve
from memmy_kb_client.desktop.server import DesktopService
from memmy_kb_client.home import service_replies
from tests.support.desktop_service import CLOUD_TOKEN, Client, serving, start

OWNER = {"user_id": "u_bob", "display_name": "Bob", "contact": "b***@example.com"}
ITEMS = [
    {"id": "kb_own", "name": "Handbook", "role": "owner", "recall": True, "owner": {"display_name": "Me"}},
    {"id": "kb_off", "name": "Archive", "role": "owner", "recall": False, "owner": {"display_name": "Me"}},
    {"id": "kb_bob", "name": "Design", "role": "reader", "recall": True, "owner": OWNER},
]


def _file(kb_id: str, name: str, folder: str = "") -> dict[str, Any]:
    return {
        "id": f"fl_{folder}{name}",
        "name": name,
        "folder_path": folder,
        "version": 2,
        "knowledge_base_id": kb_id,
    }


class KbCloud(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.recall_status = 200
        self.items = list(ITEMS)
        self.requests: list[tuple[str, str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, path, body))
        if (method, path) == ("GET", "/knowledge-bases"):
            return 200, {"items": self.items}
        scope = {kb["id"]: kb for kb in self.items if kb["recall"]}
        ids = body.get("knowledge_base_ids")
        if ids is not None and not set(ids) <= set(scope):
            error = {
                "code": "knowledge_base_not_in_scope",
                "message": "Some knowledge bases are not in scope",
            }
            return 422, {"error": error}
        if self.recall_status == 429:  # the cloud's per-user recall limit
            error = {"code": "recall_rate_limited", "message": "Too many recalls", "details": {"retry_after_seconds": 6}}
            return 429, {"error": error}
        if self.recall_status != 200:
            return self.recall_status, {"error": {"code": "recall_unavailable", "message": "MemOS failed"}}
        chosen = [scope[i] for i in ids] if ids is not None else list(scope.values())
        items = [
            {
                "title": f"From {kb['name']}",
                "content": "text",
                "knowledge_base": {"id": kb["id"], "name": kb["name"]},
                "owner": None if kb["role"] == "owner" else {"name": "Bob", "contact": OWNER["contact"]},
                # The owner's excerpts name their file; the share's text is in two of Bob's files.
                "file": _file(kb["id"], "手册.md", "制度/2024") if kb["role"] == "owner" else None,
                "files": []
                if kb["role"] == "owner"
                else [_file(kb["id"], "LICENSE"), _file(kb["id"], "LICENSE", "vendor")],
            }
            for kb in chosen
        ]
        return 200, {"items": items, "context": "", "scope_size": len(chosen), "discarded": False}


class _Handler(BaseHTTPRequestHandler):
    server: KbCloud
    protocol_version = "HTTP/1.1"

    def _reply(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        status, answer = self.server.answer(self.command, self.path, body)
        if self.headers.get("Authorization") != f"Bearer {CLOUD_TOKEN}":
            status, answer = 401, {"message": "Unauthorized"}
        raw = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = _reply

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def no_keychain(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")


@pytest.fixture
def cloud() -> Iterator[KbCloud]:
    yield from serving(KbCloud())


@pytest.fixture
def service(tmp_path: Path, cloud: KbCloud) -> Iterator[DesktopService]:
    running = start(tmp_path / "home" / "desktop", cloud.url)
    yield running
    running.stop()


@pytest.fixture
def local(service: DesktopService, tmp_path: Path) -> LocalService:
    return LocalService({"MEMMY_KB_HOME": str(tmp_path / "home")})


def test_the_scope_is_the_kbs_whose_recall_is_on_and_a_search_stays_inside_it(service, cloud, local):
    Client(service).login()
    scope = anyio.run(local.knowledge_bases)
    assert [kb.as_json() for kb in scope] == [
        {"id": "kb_own", "name": "Handbook", "owned": True, "owner": None},
        {
            "id": "kb_bob",
            "name": "Design",
            "owned": False,
            "owner": {"name": "Bob", "contact": OWNER["contact"]},
        },
    ]
    found = anyio.run(local.search, "q", resolve(["design"], scope), 5)
    assert [e["title"] for e in found["excerpts"]] == ["From Design"]
    assert found["excerpts"][0]["owner"] == {"name": "Bob", "contact": OWNER["contact"]}
    assert cloud.requests[-1] == (
        "POST",
        "/recall",
        {"query": "q", "knowledge_base_ids": ["kb_bob"], "limit": 5},
    )
    # A KB the user can read but whose recall is off is outside the scope: the name is refused here, and
    # its id, sent to the route all the same, is the cloud's 422, passed on.
    with pytest.raises(ToolRefused, match="Not a knowledge base in your recall: 'Archive'"):
        resolve(["Archive"], scope)
    with pytest.raises(ToolRefused, match="422 knowledge_base_not_in_scope"):
        anyio.run(local.search, "q", ["kb_off"], None)


def test_a_failing_cloud_and_a_logged_out_service_are_sentences(service, cloud, local):
    with pytest.raises(ToolRefused, match="not logged in"):
        anyio.run(local.knowledge_bases)
    with pytest.raises(ToolRefused, match="not logged in"):
        anyio.run(local.search, "q", None, None)
    assert cloud.requests == []
    Client(service).login()
    cloud.recall_status = 503
    with pytest.raises(ToolRefused, match="The Memmy cloud failed to answer; try again later"):
        anyio.run(local.search, "q", None, None)


def test_a_search_past_the_accounts_recall_limit_is_explained_with_the_clouds_wait(service, cloud, local):
    client = Client(service)
    client.login()
    cloud.recall_status = 429
    # The route passes the refusal on as an outcome with the wait, as it does the cloud's other outcomes
    status, answer, _ = client.request("POST", "/hook/search", client.hook_token, {"query": "q"})
    assert (status, answer) == (200, {"excerpts": [], "partial": False, "cloud": "rate_limited", "retry_after": 6})
    # and the MCP tool says what happened and when to ask again, not the error's code
    with pytest.raises(ToolRefused) as refused:
        anyio.run(local.search, "q", None, None)
    assert "Memmy limits how often one account may search" in str(refused.value)
    assert str(refused.value).endswith("try again in 6 s.")
    assert "recall_rate_limited" not in str(refused.value)


def test_a_search_of_no_knowledge_base_says_why_not_that_nothing_matched(service, cloud, local):
    """The route passes on how many knowledge bases the cloud searched (``scope_size``) and the scope how
    many of the user's are not in recall (``not_in_recall``): the MCP server says which of the two it is."""
    Client(service).login()
    cloud.items = [kb | {"recall": False} for kb in ITEMS]
    found = anyio.run(local.search, "q", None, None)
    assert (found["excerpts"], found["nothing_searched"]) == ([], local.why_empty(3))
    assert "None of your Memmy knowledge bases takes part in recall" in found["nothing_searched"]
    cloud.items = []
    found = anyio.run(local.search, "q", None, None)
    assert "You have no Memmy knowledge bases in recall yet: create one" in found["nothing_searched"]
    # The routes' own answers: the fields added beside the ones older clients read.
    cloud.items = list(ITEMS)
    assert anyio.run(local.call, "POST", "/hook/search", {"query": "q"})["scope_size"] == 2
    assert anyio.run(local.call, "GET", "/hook/knowledge-bases")["not_in_recall"] == 1
    assert "nothing_searched" not in anyio.run(local.search, "q", None, None)


def test_each_excerpt_names_the_file_or_the_candidates_the_cloud_names(service, cloud, local):
    Client(service).login()
    found = anyio.run(local.search, "q", None, None)
    own, shared = found["excerpts"]
    assert (own["file"], own["files"]) == (_file("kb_own", "手册.md", "制度/2024"), [])
    assert shared["file"] is None
    assert shared["files"] == [_file("kb_bob", "LICENSE"), _file("kb_bob", "LICENSE", "vendor")]


def _fits(answer: Any, shape: type) -> bool:
    """Has ``answer`` every key the ``TypedDict`` ``shape`` requires and none it does not name? (Its
    annotations are strings at run time: read here, with the cloud's types they name.)"""
    hints = typing.get_type_hints(shape, localns=vars(replies), include_extras=True)
    optional = {key for key, hint in hints.items() if typing.get_origin(hint) is NotRequired}
    return isinstance(answer, dict) and set(hints) - optional <= set(answer) <= set(hints)


def _fits_search(answer: Any) -> bool:
    return _fits(answer, service_replies.SearchReply) and all(
        _fits(excerpt, service_replies.SearchExcerpt) for excerpt in answer["excerpts"]
    )


def _fits_scope(answer: Any) -> bool:
    return _fits(answer, service_replies.ScopeReply) and all(
        _fits(kb, service_replies.ScopeKnowledgeBase)
        and (kb["owner"] is None or _fits(kb["owner"], service_replies.Sharer))
        for kb in answer["knowledge_bases"]
    )


def test_each_hook_route_answers_the_shape_its_readers_are_typed_with(service, cloud):
    """``home.service_replies`` types what the hook and the MCP server read: each route's answer, whatever
    the cloud came to, has the fields of its type (the readers still read them warily)."""
    client = Client(service)
    token = client.hook_token

    def ask(method: str, path: str, body: Any = None) -> Any:
        status, answer, _ = client.request(method, path, token, body)
        assert status == 200
        return answer

    answers = [(ask("POST", "/hook/search", {"query": "q"}), _fits_search)]
    answers.append((ask("GET", "/hook/knowledge-bases"), _fits_scope))
    client.login()
    for recall_status in (200, 429, 503):
        cloud.recall_status = recall_status
        answers.append((ask("POST", "/hook/search", {"query": "q", "limit": 3}), _fits_search))
        asked = {"query": "what is our refund policy", "agent": "codex"}
        answers.append((ask("POST", "/hook/recall", asked), None))
    answers.append((ask("GET", "/hook/knowledge-bases"), _fits_scope))
    clouds = [answer["cloud"] for answer, _ in answers]
    assert clouds == ["logged_out"] * 2 + ["ok"] * 2 + ["rate_limited"] * 2 + ["cloud_error"] * 2 + ["ok"]
    assert len(answers[2][0]["excerpts"]) == 2
    assert _fits(answers[2][0]["excerpts"][1]["owner"], replies.RecallOwner)
    for answer, fits in answers:
        assert fits(answer) if fits else _fits(answer, service_replies.HookRecallReply), answer
