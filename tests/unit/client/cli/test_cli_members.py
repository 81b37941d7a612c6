"""``memmy-kb kb unshare`` and ``kb leave`` say whom and what by name, as the ``rm`` commands do: the name
is looked up before the removal (the member list and the KB's record), the id only when it cannot be."""

from __future__ import annotations

import base64
import json
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.cli import commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

KB_ID = "kb_1"
READER_ID = "reader|1"
OWNER = "owner-token"
_claims = base64.urlsafe_b64encode(json.dumps({"sub": READER_ID}).encode()).decode().rstrip("=")
READER = f"e30.{_claims}.sig"  # the client reads its own sub without verifying


class FakeService:
    def __init__(self) -> None:
        self.members_readable = True
        self.requests: list[tuple[str, str]] = []

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = unquote(request.url.raw_path.decode())
        self.requests.append((request.method, path))
        match request.method, path.split("/")[1:]:
            case "GET", ["knowledge-bases"]:
                role = "owner" if request.headers["Authorization"] == f"Bearer {OWNER}" else "reader"
                return httpx.Response(200, json={"items": [{"id": KB_ID, "name": "产品资料", "role": role}]})
            case "GET", ["knowledge-bases", "kb_1"]:
                return httpx.Response(200, json={"id": KB_ID, "name": "产品资料", "role": "owner"})
            case "GET", ["knowledge-bases", "kb_1", "members"]:
                if not self.members_readable:
                    return httpx.Response(503, json={"error": {"code": "unavailable", "message": "later"}})
                items = [{"user_id": READER_ID, "display_name": "销售小王", "recall": True}]
                return httpx.Response(200, json={"items": items})
            case "DELETE", ["knowledge-bases", "kb_1", "members", _]:
                return httpx.Response(204)
        return httpx.Response(404, json={"error": {"code": "route_not_found", "message": "No such route."}})

    def client(self, token: str) -> MemmyClient:
        http = mock_http(self.handle, "http://memmy.test")
        return MemmyClient(ClientConfig(endpoint="http://memmy.test", token=token), http=http)


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setattr(commands, "_client", lambda args: fake.client(args.token or OWNER))
    return fake


def test_unshare_names_whom_it_revoked(service: FakeService, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["kb", "unshare", KB_ID, READER_ID, "--token", OWNER]) == 0
    assert capsys.readouterr().out == f"revoked '销售小王' ({READER_ID})\n"
    assert service.requests[-1] == ("DELETE", f"/knowledge-bases/{KB_ID}/members/{READER_ID}")


def test_unshare_names_by_id_when_the_list_cannot_be_read(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    service.members_readable = False
    assert cli.main(["kb", "unshare", KB_ID, READER_ID, "--token", OWNER]) == 0
    assert capsys.readouterr().out == f"revoked {READER_ID}\n"
    assert service.requests[-1][0] == "DELETE"


def test_leave_names_the_kb_it_left(service: FakeService, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["kb", "leave", KB_ID, "--token", READER, "--endpoint", "http://memmy.test"]) == 0
    assert capsys.readouterr().out == "left knowledge base '产品资料'\n"
    assert service.requests[-1] == ("DELETE", f"/knowledge-bases/{KB_ID}/members/{READER_ID}")


def test_json_prints_an_object_naming_what_was_removed(
    service: FakeService, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["kb", "unshare", KB_ID, READER_ID, "--token", OWNER, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"revoked": READER_ID}
    assert (
        cli.main(["kb", "leave", KB_ID, "--token", READER, "--endpoint", "http://memmy.test", "--json"]) == 0
    )
    assert json.loads(capsys.readouterr().out) == {"left": KB_ID}
