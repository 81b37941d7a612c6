"""The page's pure parts: which /api paths map to which cloud routes, one-time codes, sessions, cookies."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from memmy_kb_client.desktop import page


@pytest.mark.parametrize(
    ("method", "path", "query", "target"),
    [
        ("GET", "/knowledge-bases", "", "/knowledge-bases"),
        (
            "GET",
            "/knowledge-bases/kb_1/files",
            "folder_id=f_2&x=1",
            "/knowledge-bases/kb_1/files?folder_id=f_2",
        ),
        ("DELETE", "/knowledge-bases/kb_1/members/u%252F1", "", "/knowledge-bases/kb_1/members/u%2F1"),
        ("DELETE", "/knowledge-bases/kb_1/members/u%2F1", "", None),  # escaped once: not from the page
        ("POST", "/recall", "", "/recall"),
        ("PUT", "/me", "", "/me"),
        ("GET", "/me", "", None),
        ("POST", "/knowledge-bases/kb_1", "", None),
        ("GET", "/knowledge-bases/kb_1/files/f_1", "", "/knowledge-bases/kb_1/files/f_1"),
        ("POST", "/knowledge-bases/kb_1/files/f_1/replacements", "", "/knowledge-bases/kb_1/files/f_1/replacements"),
        ("GET", "/knowledge-bases/kb_1/files/f_1/replacements", "", None),
        ("GET", "/knowledge-bases/../me", "", None),
        ("GET", "/control/status", "", None),
    ],
)
def test_cloud_targets(method, path, query, target):
    assert page.cloud_target(method, path, query) == target


def page_segment(ident: str) -> str:
    """What api.js's ``seg`` makes of an id: every character but A-Z a-z 0-9 - _ ~ escaped, twice."""

    def escape_all(text: str) -> str:
        return quote(text, safe="").replace(".", "%2E")

    return escape_all(escape_all(ident))


# User ids a login provider or a test could issue, and what the cloud must get: each escaped once.
ODD_IDS = [
    (".", "%2E"),
    ("..", "%2E%2E"),
    ("!'()*", "%21%27%28%29%2A"),
    ("auth0|1", "auth0%7C1"),
    ("a/b%2F", "a%2Fb%252F"),
    ("张 三", "%E5%BC%A0%20%E4%B8%89"),
    ("a.b", "a%2Eb"),
    ("%2E", "%252E"),
]


@pytest.mark.parametrize(("ident", "sent"), ODD_IDS)
def test_an_id_the_page_escapes_twice_reaches_the_cloud_escaped_once(ident, sent):
    segment = page_segment(ident)
    assert "." not in segment
    assert page.cloud_target("DELETE", f"/knowledge-bases/kb_1/members/{segment}", "") == (
        f"/knowledge-bases/kb_1/members/{sent}"
    )
    assert unquote(sent) == ident  # the cloud decodes path parameters once
    assert page.cloud_segment(segment) == sent


@pytest.mark.parametrize(
    "segment",
    [
        ".",
        "..",
        "",
        "a b",
        "a/b",
        "%ZZ",
        "%25FF",
        "%FF",
        "%E5%BC%A0",
        "%25",
        "a?b",
        "%25" + "41" * 300,
        "x" * 5121,
    ],
)
def test_segments_that_are_not_a_page_escaped_id_are_refused(segment):
    assert page.cloud_target("DELETE", f"/knowledge-bases/kb_1/members/{segment}", "") is None


def test_literal_route_segments_must_match_exactly():
    assert page.cloud_target("GET", "/knowledge-bases/kb_1/%6Dembers", "") is None
    assert page.cloud_target("GET", "knowledge-bases", "") is None
    assert page.cloud_target("GET", "/knowledge-bases/", "") is None


def test_every_cloud_route_the_page_uses_is_listed():
    assert len(page.CLOUD_ROUTES) == 37


@pytest.mark.parametrize(
    ("method", "path", "target"),
    [
        ("POST", "/teams", "/teams"),
        ("GET", "/teams/tm_1", "/teams/tm_1"),
        ("DELETE", "/teams/tm_1/members/auth0%257C1", "/teams/tm_1/members/auth0%7C1"),
        ("PATCH", "/teams/tm_1/members/%252E%252E", "/teams/tm_1/members/%2E%2E"),
        ("POST", "/teams/tm_1/decline", "/teams/tm_1/decline"),
        ("DELETE", "/knowledge-bases/kb_1/teams/tm_1", "/knowledge-bases/kb_1/teams/tm_1"),
    ],
)
def test_the_team_routes_are_reached_as_sharing_is(method, path, target):
    assert page.cloud_target(method, path, "") == target


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/teams/tm_1/members"), ("PUT", "/teams/tm_1"), ("POST", "/teams/tm_1/members/u_1"), ("GET", "/teams/tm_1/accept")],
)
def test_no_team_route_the_cloud_does_not_have_is_reached(method, path):
    assert page.cloud_target(method, path, "") is None


@pytest.mark.parametrize(
    ("method", "path", "target"),
    [
        ("GET", "/me/connections", "/me/connections"),
        ("DELETE", "/me/connections/conn_0123456789abcdef0123", "/me/connections/conn_0123456789abcdef0123"),
        ("DELETE", "/me/connections/%252E%252E", "/me/connections/%2E%2E"),
    ],
)
def test_the_connected_apps_are_listed_and_disconnected_through_the_service(method, path, target):
    assert page.cloud_target(method, path, "") == target


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/me/connections"), ("GET", "/me/connections/conn_1"), ("DELETE", "/me/connections"), ("POST", "/mcp")],
)
def test_no_connection_is_made_nor_the_mcp_endpoint_reached_through_the_service(method, path):
    assert page.cloud_target(method, path, "") is None


def test_a_code_is_good_once_and_for_a_minute():
    sessions = page.Sessions()
    code = sessions.new_code(now=0.0)
    redeemed = sessions.redeem(code, now=59.0)
    assert redeemed is not None
    session_id, session = redeemed
    assert sessions.redeem(code, now=59.0) is None
    assert sessions.find(session_id, now=60.0) is session
    assert sessions.find(session_id + "x", now=60.0) is None
    assert sessions.find(session_id, now=60.0 + page.SESSION_IDLE_SECONDS + 1) is None
    late = sessions.new_code(now=0.0)
    assert sessions.redeem(late, now=page.CODE_TTL_SECONDS) is None


def test_sessions_and_codes_are_bounded():
    sessions = page.Sessions()
    codes = [sessions.new_code(now=0.0) for _ in range(page.MAX_CODES + 5)]
    assert sessions.redeem(codes[0], now=1.0) is None  # pushed out by newer ones
    ids = []
    for _ in range(page.MAX_SESSIONS + 3):
        redeemed = sessions.redeem(sessions.new_code(now=1.0), now=1.0)
        assert redeemed is not None
        ids.append(redeemed[0])
    assert sessions.find(ids[0], now=2.0) is None
    assert sessions.find(ids[-1], now=2.0) is not None


def test_csrf_and_cookies():
    session = page.Session(csrf="abc")
    assert page.csrf_ok(session, "abc")
    assert not page.csrf_ok(session, None)
    assert not page.csrf_ok(session, "abd")
    header = "other=1; memmy_kb_session_8765=s3cret; x=y"
    assert page.cookie_value(header, "memmy_kb_session_8765") == "s3cret"
    assert page.cookie_value(header, "memmy_kb_session_1") is None
    assert page.cookie_value(None, "a") is None


@pytest.mark.parametrize(
    ("key", "kept"), [("k-1:2.3", True), ("a b", False), ("x" * 129, False), (None, False)]
)
def test_idempotency_keys(key, kept):
    assert (page.idempotency_key(key) is not None) is kept


def test_the_assets_ship_in_the_package_and_load_nothing_from_elsewhere():
    for name, _ in page.ASSETS.values():
        # The icon's SVG namespace is a name, not something loaded
        text = page.asset(name).decode("utf-8").replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "https://" not in text
        assert "http://" not in text


# Refusals the page's own actions (create, share, upload) can meet whose fallback text would mislead: a
# 409 reads as "conflicts (the same name?)", a 413 as "the file is too large".
_PAGE_REFUSALS = {
    "account_not_found",
    "already_member",
    "cannot_share_with_self",
    "identifier_ambiguous",
    "memos_quota_exhausted",
    "rate_limited",
}
# Blocking someone is not on the page (declining a team's invitation with a block is, and its refusals are).
_PAGE_SKIPS = {"block_limit_reached"}


def _service_codes() -> set[str]:
    root = Path(__file__).resolve().parents[4] / "layers" / "core" / "python" / "memmy_kb"
    return {code for path in root.rglob("*.py") for code in re.findall(r'code="([a-z_]+)"', path.read_text())}


def test_every_limit_and_share_refusal_has_its_own_text_in_both_languages():
    codes = {c for c in _service_codes() if c.endswith("_limit_reached")} - _PAGE_SKIPS
    assert {"kb_limit_reached", "kb_file_limit_reached", "kb_storage_limit_reached"} <= codes
    script = page.asset("text.js").decode("utf-8")
    for code in sorted(codes | _PAGE_REFUSALS):
        assert script.count(f"err_{code}:") == 2, code  # once in Chinese, once in English


def test_every_failure_reason_code_has_its_own_text_in_both_languages():
    reasons = Path(__file__).resolve().parents[4] / "layers/core/python/memmy_kb/domain/uploads/reasons.py"
    codes = set(re.findall(r'"([a-z][a-z0-9_]+)"\)?,?\n', reasons.read_text())) - {"other"}
    codes |= {f"invalid_{ext}" for ext in ("pdf", "doc", "docx", "json", "xml")}
    assert {"invalid_pdf", "kb_gone", "engine_failed", "kb_storage_limit_reached"} <= codes
    script = page.asset("text.js").decode("utf-8")
    block = script[script.index("export const REASONS = {") :]
    for code in sorted(codes):
        assert block.count(f"{code}:") == 2, code  # once in Chinese, once in English
