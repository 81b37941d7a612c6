"""The authorization server's pages and browser checks (memmy_kb.api.mcp_auth.pages, .browser): a
hostile client name is shown as text, the policy lets the form post only here and to the client, the
language follows the browser, and the cookie and consent token bind a sign-in to its browser."""

from __future__ import annotations

import pytest

from memmy_kb.api.mcp_auth import pages
from memmy_kb.api.mcp_auth.browser import COOKIE_NAME, browser_cookie, digest, same_browser

HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def _consent(**changed: str) -> str:
    values = {
        "request_id": "req-1", "consent": "tok-1", "user": "alice@example.com", "client_name": HOSTILE,
        "client_id": "mcp-1", "redirect_host": "app.example", "redirect_origin": "https://app.example",
    } | changed  # fmt: skip
    return pages.consent_page("en", **values).body  # type: ignore[arg-type]


def test_a_hostile_client_name_is_shown_as_text():
    body = _consent()
    assert "<script>" not in body
    assert "<img" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img" in body


def test_a_client_without_a_name_is_shown_by_its_client_id_escaped():
    body = _consent(client_name="", client_id='https://x.test/"><b>')
    assert "<b>" not in body
    assert "https://x.test/&quot;&gt;&lt;b&gt;" in body


def test_the_consent_form_posts_the_request_the_token_and_the_decision():
    body = _consent()
    assert 'action="/oauth/consent"' in body
    assert 'name="request" value="req-1"' in body
    assert 'name="consent" value="tok-1"' in body
    assert 'name="decision" value="allow"' in body
    assert 'name="decision" value="deny"' in body
    assert "knowledge bases in your recall scope" in body


def test_the_consent_page_is_framed_by_no_one_cached_by_no_one_and_posts_only_here_or_to_the_client():
    answer = pages.consent_page(
        "zh", request_id="r", consent="c", user="u", client_name="A", client_id="a",
        redirect_host="app.example", redirect_origin="https://app.example",
    )  # fmt: skip
    policy = answer.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert "form-action 'self' https://app.example;" in policy
    assert "script-src" not in policy
    assert answer.headers["cache-control"] == "no-store"
    assert answer.headers["x-frame-options"] == "DENY"
    assert "允许" in answer.body
    assert "拒绝" in answer.body
    assert 'lang="zh-CN"' in answer.body


def test_the_error_page_escapes_its_detail_and_posts_nowhere_else():
    answer = pages.error_page("en", "bad_request", f"invalid_request: {HOSTILE}")
    assert answer.status == 400
    assert "<script>" not in answer.body
    assert "form-action 'self';" in answer.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("header", "lang"),
    [(None, "zh"), ("", "zh"), ("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("en-US,en;q=0.9", "en"),
     ("EN;q=1", "en"), ("fr-FR,en;q=0.5", "zh")],
)  # fmt: skip
def test_the_language_is_chinese_unless_english_comes_first(header: str | None, lang: str):
    assert pages.language(header) == lang


def test_the_cookie_is_host_only_secure_http_only_and_lax():
    value = browser_cookie("abc")
    assert value.startswith(f"{COOKIE_NAME}=abc;")
    for part in ("Path=/", "Secure", "HttpOnly", "SameSite=Lax", "Max-Age=600"):
        assert part in value
    assert "Domain=" not in value


def test_only_the_cookie_whose_digest_the_sign_in_keeps_is_the_same_browser():
    kept = digest("the-cookie")
    assert same_browser({COOKIE_NAME: "the-cookie"}, kept)
    assert not same_browser({COOKIE_NAME: "another"}, kept)
    assert not same_browser({}, kept)
    assert not same_browser({COOKIE_NAME: ""}, digest(""))
    assert not same_browser({"memmy-oauth": "the-cookie"}, kept)
