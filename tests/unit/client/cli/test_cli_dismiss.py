"""``memmy-kb files dismiss KB UPLOAD`` and ``MemmyClient.dismiss_upload``, against a fake service that
answers ``DELETE /knowledge-bases/{kb}/uploads/{upload}`` as the cloud does (204; 409
``upload_not_failed`` for an upload still in progress)."""

from __future__ import annotations

import httpx
import pytest

from memmy_kb_client.cli import commands
from memmy_kb_client.cli import main as cli
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

KB_ID = "kb|1 产品"  # escaped on the wire


def fake_client(seen: list[httpx.Request]) -> MemmyClient:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/knowledge-bases":  # the KB named, looked up first
            return httpx.Response(200, json={"items": [{"id": KB_ID, "name": "产品资料", "role": "owner"}]})
        seen.append(request)
        if request.url.raw_path.endswith(b"/uploads/up_busy"):
            return httpx.Response(
                409, json={"error": {"code": "upload_not_failed", "message": "Not failed."}}
            )
        return httpx.Response(204)

    http = mock_http(handle)
    return MemmyClient(ClientConfig(endpoint="http://cloud.test", token="t"), http=http)


@pytest.mark.parametrize(("upload", "code", "out"), [("up_failed", 0, "dismissed"), ("up_busy", 1, "")])
def test_files_dismiss_deletes_the_upload_and_reports_a_refusal(monkeypatch, capsys, upload, code, out):
    seen: list[httpx.Request] = []
    monkeypatch.setattr(commands, "_client", lambda args: fake_client(seen))

    assert cli.main(["files", "dismiss", KB_ID, upload]) == code

    assert [(r.method, r.url.raw_path.decode()) for r in seen] == [
        ("DELETE", f"/knowledge-bases/kb%7C1%20%E4%BA%A7%E5%93%81/uploads/{upload}")
    ]
    printed = capsys.readouterr()
    assert printed.out.strip() == out
    if code:
        assert "upload_not_failed" in printed.err
