"""The page's side of the local service in-process, in front of a fake cloud that records what reaches it:
the one-time code, the session cookie, the CSRF token, which /api routes are sent on (with the cloud
login, which the page never sees), and what the page gets when the login is missing or refused."""

from __future__ import annotations

import html
import json

import pytest

from memmy_kb_client.desktop import page
from memmy_kb_client.home.advice import Launcher
from tests.support.desktop_page import call, cloud, control, service, signed_in
from tests.support.desktop_service import CLOUD_TOKEN, start

__all__ = ["cloud", "service"]  # the fixtures: a cloud that records, a signed-in service in front of it


def test_a_one_time_code_becomes_an_httponly_strict_cookie_once(service):
    url = str(control(service, "POST", "/control/page-code")["url"])
    status, headers, _ = call(service, "GET", url.removeprefix(service.url) + "&lang=en")
    assert status == 303
    assert headers["location"] == "/?lang=en"
    flags = [part.strip() for part in headers["set-cookie"].split(";")]
    assert flags[0].startswith(f"memmy_kb_session_{service.port}=")
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(flags[1:])
    assert call(service, "GET", url.removeprefix(service.url))[0] == 403  # used once
    assert call(service, "GET", "/open?code=guessed")[0] == 403
    assert call(service, "GET", "/open")[0] == 403


def test_a_link_opened_again_in_the_same_browser_goes_on_to_the_page(service):
    url = str(control(service, "POST", "/control/page-code")["url"]).removeprefix(service.url)
    _, headers, _ = call(service, "GET", url)
    cookie = headers["set-cookie"].split(";", 1)[0]

    status, again, _ = call(service, "GET", url + "&lang=en", {"Cookie": cookie})
    assert (status, again["location"]) == (303, "/?lang=en")
    assert "set-cookie" not in again  # no second session
    # Another browser, with no session of this service, is refused
    assert call(service, "GET", url, {"Cookie": f"{service.state.cookie_name}=forged"})[0] == 403


def test_a_browser_fetching_ahead_does_not_spend_the_code(service):
    url = str(control(service, "POST", "/control/page-code")["url"]).removeprefix(service.url)
    for purpose in ({"Sec-Purpose": "prefetch;prerender"}, {"Purpose": "prefetch"}):
        status, headers, _ = call(service, "GET", url, purpose)
        assert (status, "set-cookie" in headers) == (503, False)
    assert call(service, "GET", url)[0] == 303  # the navigation itself


def test_a_used_link_says_how_to_get_a_new_one_in_the_browsers_language(service):
    status, headers, body = call(service, "GET", "/open?code=used", {"Accept-Language": "en-GB,en;q=0.8"})
    page_text = body.decode()
    assert (status, headers["content-type"]) == (403, "text/html; charset=utf-8")
    assert '<link rel="stylesheet" href="/app.css">' in page_text
    assert "works once, within 10 minutes" in page_text
    opener = service.state.commands()["open"]
    assert f"For a new one, run <code>{html.escape(opener)}</code>." in page_text
    chinese = call(service, "GET", "/open?code=used", {"Accept-Language": "zh-CN,zh;q=0.9"})[2].decode()
    assert "此链接已使用或已过期" in chinese


def test_for_the_local_stacks_service_a_new_link_is_an_enter_away(tmp_path, cloud):
    launcher = Launcher("make run ARGS=--demo", str(tmp_path))
    running = start(tmp_path / "home" / "desktop", cloud.url, launcher=launcher)
    try:
        page_text = call(running, "GET", "/open?code=used", {"Accept-Language": "en"})[2].decode()
        status, _, body = call(running, "GET", "/api/session")
    finally:
        running.stop()
    assert "press Enter in the terminal where <code>make run ARGS=--demo</code> runs" in page_text
    assert status == 401
    # What the page shows without a session names the same
    assert json.loads(body)["commands"]["stack"] == "make run ARGS=--demo"
    assert json.loads(body)["commands"]["open"].endswith("desktop open")


def test_an_expired_code_is_refused():
    sessions = page.Sessions()
    code = sessions.new_code(now=100.0)
    assert sessions.redeem(code, now=100.0 + page.CODE_TTL_SECONDS + 1) is None
    assert sessions.redeem(code, now=101.0) is None  # gone after one try


def test_only_the_control_token_gets_a_code(service):
    assert call(service, "POST", "/control/page-code")[0] == 401
    hook = {"Authorization": f"Bearer {service.state.hook_token}"}
    assert call(service, "POST", "/control/page-code", hook)[0] == 403


def test_the_page_and_its_assets_are_served_with_a_strict_policy(service):
    for path, kind in (("/", "text/html"), ("/app.js", "text/javascript"), ("/app.css", "text/css")):
        status, headers, body = call(service, "GET", path)
        assert status == 200
        assert headers["content-type"].startswith(kind)
        assert body
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
    html = call(service, "GET", "/")[2].decode()
    assert '<script type="module" src="/app.js">' in html
    # The icon the page links, and the one browsers ask for anyway: no 404 on any load
    assert '<link rel="icon" href="/favicon.svg"' in html
    for path in ("/favicon.svg", "/favicon.ico"):
        status, headers, body = call(service, "GET", path)
        assert (status, headers["content-type"]) == (200, "image/svg+xml")
        assert body.startswith(b"<svg")
    assert "http" not in html.split("<body>")[0].replace("http-equiv", "")


def test_api_routes_need_the_session_and_changes_the_csrf_token(service, cloud):
    assert call(service, "GET", "/api/knowledge-bases")[0] == 401
    assert (
        call(service, "GET", "/api/knowledge-bases", {"Cookie": f"memmy_kb_session_{service.port}=x"})[0]
        == 401
    )
    good = signed_in(service)
    assert call(service, "GET", "/api/knowledge-bases", good)[0] == 200
    no_csrf = {k: v for k, v in good.items() if k != "X-CSRF-Token"}
    status, _, body = call(service, "POST", "/api/knowledge-bases", no_csrf, {"name": "x"})
    assert (status, json.loads(body)["error"]["code"]) == (403, "csrf_token_required")
    wrong = {**good, "X-CSRF-Token": "nope"}
    assert call(service, "POST", "/api/knowledge-bases", wrong, {"name": "x"})[0] == 403
    foreign = {**good, "Origin": "http://evil.example"}
    assert call(service, "DELETE", "/api/knowledge-bases/kb_1", foreign)[0] == 403
    for site in ("cross-site", "same-site"):  # another site, or another port on 127.0.0.1
        status, _, body = call(service, "GET", "/api/knowledge-bases", {**good, "Sec-Fetch-Site": site})
        assert (status, json.loads(body)["error"]["code"]) == (403, "forbidden_origin")
    control_token = {**good, "Authorization": f"Bearer {service.state.control_token}"}
    assert call(service, "GET", "/api/knowledge-bases", control_token)[0] == 403
    # Nothing refused reached the cloud
    assert [r["method"] for r in cloud.requests] == ["GET"]


def test_page_requests_reach_the_cloud_with_the_login_the_page_never_sees(service, cloud):
    good = signed_in(service)
    _, _, session = call(service, "GET", "/api/session", good)
    assert CLOUD_TOKEN not in session.decode()
    assert CLOUD_TOKEN.split(".")[2] not in session.decode()
    status, _, _ = call(
        service,
        "POST",
        "/api/knowledge-bases/kb_1/uploads",
        {**good, "Idempotency-Key": "k-1"},
        {"filename": "a.md", "size_bytes": 3},
    )
    assert status == 200
    call(service, "GET", "/api/knowledge-bases/kb_1/files?folder_id=f%2F1&evil=1", good)
    call(service, "DELETE", "/api/knowledge-bases/kb_1/members/u_2", good)
    sent = cloud.requests
    assert [(r["method"], r["path"]) for r in sent] == [
        ("POST", "/knowledge-bases/kb_1/uploads"),
        ("GET", "/knowledge-bases/kb_1/files?folder_id=f%2F1"),
        ("DELETE", "/knowledge-bases/kb_1/members/u_2"),
    ]
    assert all(r["headers"]["Authorization"] == f"Bearer {CLOUD_TOKEN}" for r in sent)
    assert sent[0]["headers"]["Idempotency-Key"] == "k-1"
    assert json.loads(sent[0]["body"]) == {"filename": "a.md", "size_bytes": 3}
    assert "Cookie" not in sent[0]["headers"]
    assert "X-CSRF-Token" not in sent[0]["headers"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/control/status"),
        ("POST", "/api/hook/recall"),
        ("GET", "/api/knowledge-bases/a/b"),
        ("PUT", "/api/knowledge-bases"),
        ("GET", "/api/_emulator/state"),
        ("GET", "/api/knowledge-bases/../me"),
    ],
)
def test_only_the_cloud_routes_the_page_needs_are_sent_on(service, cloud, method, path):
    assert call(service, method, path, signed_in(service), {} if method != "GET" else None)[0] in (404, 405)
    assert cloud.requests == []


def test_logged_out_or_refused_the_page_is_told_to_log_in(service, cloud):
    good = signed_in(service)
    cloud.status = 401
    status, _, body = call(service, "GET", "/api/knowledge-bases", good)
    assert (status, json.loads(body)["error"]["code"]) == (503, "cloud_login_rejected")
    assert service.state.status()["login"]["state"] == "rejected"
    service.state.clear_login()
    status, _, body = call(service, "GET", "/api/knowledge-bases", good)
    assert (status, json.loads(body)["error"]["code"]) == (503, "desktop_logged_out")
    assert json.loads(call(service, "GET", "/api/session", good)[2])["login"] == "logged_out"
