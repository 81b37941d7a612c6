"""``memmy-kb connections ls|revoke`` against a fake cloud that keeps the connections (docs/desktop.md,
"Connected apps"): the table lined up in terminal columns with local times, the activity, ``--json``, a
connection taken by id or unique client name, an unknown or ambiguous name refused in words with nothing
sent, and the service's refusals as exit 1 with its sentence and code."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.cli import commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http


def connection(conn_id: str, name: str | None, state: str = "active", **extra: Any) -> dict[str, Any]:
    return {
        "id": conn_id,
        "client_id": f"https://{conn_id}.example/client.json",
        "client_name": name,
        "scope": ["kb.search"],
        "since": "2026-12-01T02:00:00Z",
        "last_used": "2026-12-07T10:05:00Z",
        "state": state,
        "revoked_at": "2026-12-06T01:00:00Z" if state == "revoked" else None,
        **extra,
    }


class FakeCloud:
    def __init__(self) -> None:
        self.connections = [
            connection("conn_claude", "Claude"),
            connection("conn_gpt1", "研发助手"),
            connection("conn_gpt2", "研发助手", last_used=None),
            connection("conn_old", "Claude", state="revoked"),
            connection("conn_url", None),
        ]
        self.activity = [
            {
                "kind": "connection_revoked",
                "connection_id": "conn_old",
                "client_name": "Claude",
                "at": "2026-12-06T01:00:00Z",
            },
            {
                "kind": "connection_added",
                "connection_id": "conn_gpt1",
                "client_name": "研发助手",
                "at": "2026-12-05T01:00:00Z",
            },
        ]
        self.sent: list[tuple[str, str]] = []
        self.listing_down = False

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = unquote(request.url.raw_path.decode())
        self.sent.append((request.method, path))
        match request.method, path.split("/")[1:]:
            case "GET", ["me", "connections"] if self.listing_down:
                return httpx.Response(
                    503, json={"error": {"code": "unavailable", "message": "Try again shortly."}}
                )
            case "GET", ["me", "connections"]:
                return httpx.Response(200, json={"connections": self.connections, "activity": self.activity})
            case "DELETE", ["me", "connections", conn_id]:
                if all(c["id"] != conn_id for c in self.connections):
                    error = {"code": "connection_not_found", "message": "No such connection."}
                    return httpx.Response(404, json={"error": error})
                return httpx.Response(204)
        return httpx.Response(404, json={"error": {"code": "route_not_found", "message": "No such route."}})

    def revoked(self) -> list[str]:
        return [path for method, path in self.sent if method == "DELETE"]

    def client(self) -> MemmyClient:
        config = ClientConfig(endpoint="http://memmy.test", token="t")
        return MemmyClient(config, http=mock_http(self.handle, "http://memmy.test"))


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch) -> FakeCloud:
    fake = FakeCloud()
    monkeypatch.setattr(commands, "_client", lambda args: fake.client())
    return fake


@pytest.fixture
def in_shanghai(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The local time zone UTC+8, so that the times shown are seen converted from the cloud's UTC."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ls_lines_up_the_apps_in_local_time_then_the_activity(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], in_shanghai: None
) -> None:
    code, out, err = run(capsys, "connections", "ls")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "Connected apps (they may search and read your knowledge bases, read only):",
        "  ID           CLIENT                                SINCE             LAST USED         STATE",
        "  conn_claude  Claude                                2026-12-01 10:00  2026-12-07 18:05  active",
        "  conn_gpt1    研发助手                              2026-12-01 10:00  2026-12-07 18:05  active",
        "  conn_gpt2    研发助手                              2026-12-01 10:00  never             active",
        "  conn_url     https://conn_url.example/client.json  2026-12-01 10:00  2026-12-07 18:05  active",
        "  conn_old     Claude                                2026-12-01 10:00  2026-12-07 18:05  disconnected 2026-12-06 09:00",
        "Recent activity:",
        "  2026-12-06 09:00  disconnected  Claude    (conn_old)",
        "  2026-12-05 09:00  connected     研发助手  (conn_gpt1)",
    ]


def test_ls_with_none_says_what_a_connected_app_is_and_that_local_agents_use_the_desktop(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.connections, cloud.activity = [], []
    code, out, _ = run(capsys, "connections", "ls")
    assert code == 0
    assert out.splitlines()[1].startswith(
        "  (no connected apps: an app such as a Claude or ChatGPT connector"
    )
    assert "agents on this computer use the desktop service instead" in out
    assert "Recent activity" not in out


def test_ls_json_prints_the_apis_object(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "connections", "ls", "--json")
    assert code == 0
    assert json.loads(out) == {"connections": cloud.connections, "activity": cloud.activity}


@pytest.mark.parametrize(
    ("given", "revoked"),
    [
        ("conn_gpt2", "conn_gpt2"),  # an id, even of a name two share
        ("Claude", "conn_claude"),  # the active one of a name a disconnected one has too
        ("https://conn_url.example/client.json", "conn_url"),  # an unnamed app by its client id
    ],
)
def test_revoke_takes_an_id_or_a_unique_client_name(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], given: str, revoked: str
) -> None:
    code, out, err = run(capsys, "connections", "revoke", given)
    assert (code, err) == (0, "")
    assert out.startswith("disconnected '")
    assert f"({revoked}): its tokens are refused from now on" in out
    assert cloud.revoked() == [f"/me/connections/{revoked}"]


def test_revoke_json_says_which(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "connections", "revoke", "Claude", "--json")[:2] == (
        0,
        '{\n  "revoked": "conn_claude"\n}\n',
    )


def test_an_ambiguous_name_lists_the_ids_and_sends_nothing(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str], in_shanghai: None
) -> None:
    code, out, err = run(capsys, "connections", "revoke", "研发助手")
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "error: 2 connected apps are named '研发助手': give the id of the one you mean:",
        "  conn_gpt1  研发助手  2026-12-01 10:00",
        "  conn_gpt2  研发助手  2026-12-01 10:00",
    ]
    assert cloud.revoked() == []


def test_an_unknown_name_says_how_to_list_them_and_sends_nothing(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "connections", "revoke", "Cursor")
    assert code == 1
    assert err.startswith("error: no connected app has the id or name 'Cursor'")
    assert "`memmy-kb connections ls` lists them" in err
    assert cloud.revoked() == []


def test_while_the_listing_fails_the_argument_is_taken_as_an_id_and_the_cloud_says_it_is_unknown(
    cloud: FakeCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    cloud.listing_down = True
    code, _, err = run(capsys, "connections", "revoke", "conn_gone")
    assert code == 1
    assert err == "error: No such connection. (404 connection_not_found)\n"
    assert cloud.revoked() == ["/me/connections/conn_gone"]


def test_revoke_without_an_id_is_a_usage_error(cloud: FakeCloud, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["connections", "revoke"])
    assert exited.value.code == 2
    assert cloud.sent == []
