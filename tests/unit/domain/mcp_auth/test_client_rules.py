"""The rules for an MCP client's metadata (memmy_kb.domain.mcp_auth.clients): which redirect URIs a client
may have and which a request's matches, the name shown on the consent page, and the digests."""

from __future__ import annotations

import hashlib

import pytest

from memmy_kb.domain.mcp_auth import clients
from memmy_kb.domain.mcp_auth.clients import (
    ClientMetadataProblem,
    clean_client_name,
    client_record_from_json,
    digest,
    origin,
    redirect_uri_matches,
    redirect_uri_problem,
)
from memmy_kb.domain.ports.mcp_auth import ClientRecord
from tests.support.linear_time import assert_linear_time, assert_within


@pytest.mark.parametrize(
    "uri",
    ["https://agent.example/cb", "https://agent.example:8443/oauth/cb?x=1", "http://127.0.0.1:33418/callback",
     "http://localhost/cb", "http://[::1]:9000/cb", "https://xn--bcher-kva.example/cb"],
)  # fmt: skip
def test_https_and_loopback_http_redirect_uris_are_accepted(uri: str) -> None:
    assert redirect_uri_problem(uri) is None


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        ("http://agent.example/cb", "neither an https URL"),
        ("http://127.0.0.2.example/cb", "neither an https URL"),
        ("myapp:/cb", "with a host"),
        ("https://agent.example/cb#x", "no fragment"),
        ("https://user@agent.example/cb", "no user name"),
        ("https://agent.example;script-src/cb", "not one"),
        ("https://agent.example:99999/cb", "not a URL"),
        ("", "non-empty string"),
        ("https://agent.example/" + "x" * 2000, "at most 2000"),
    ],
)
def test_other_redirect_uris_are_refused_with_a_reason(uri: str, says: str) -> None:
    problem = redirect_uri_problem(uri)

    assert problem is not None
    assert says in problem


@pytest.mark.parametrize(
    ("registered", "requested", "matches"),
    [
        ("https://agent.example/cb", "https://agent.example/cb", True),
        ("https://agent.example/cb", "https://agent.example/cb/", False),
        ("https://agent.example/cb", "https://agent.example:444/cb", False),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.1:6000/cb", True),  # RFC 8252 7.3: any port
        ("http://127.0.0.1/cb", "http://127.0.0.1:6000/cb", True),
        ("http://127.0.0.1:5000/cb", "http://localhost:5000/cb", False),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.1:5000/other", False),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.1:5000/cb?x=1", False),
        ("http://127.0.0.1:5000/cb", "http://127.0.0.1/cb", False),
    ],
)
def test_a_requests_redirect_uri_matches_exactly_or_at_another_loopback_port(
    registered: str, requested: str, matches: bool
) -> None:
    assert redirect_uri_matches(registered, requested) is matches


def test_the_redirect_origin_names_scheme_host_and_port() -> None:
    assert origin("https://agent.example/cb?x=1") == "https://agent.example"
    assert origin("http://127.0.0.1:5000/cb") == "http://127.0.0.1:5000"
    assert origin("http://[::1]:9000/cb") == "http://[::1]:9000"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("Claude", "Claude"),
        ("  Claude \n\t Code  ", "Claude Code"),
        ("Good\u202eevil", "Goodevil"),  # a bidi override would turn the rest around
        ("zero\u200bwidth", "zerowidth"),
        ("\x00\x07", None),
        (None, None),
        ("Memmy 助手", "Memmy 助手"),
        ("x" * 100, "x" * 100),
    ],
)
def test_a_client_name_is_shown_without_hidden_characters(raw: str | None, shown: str | None) -> None:
    assert clean_client_name(raw) == shown


def test_a_client_name_longer_than_100_characters_is_refused() -> None:
    with pytest.raises(ClientMetadataProblem, match="at most 100 characters") as refused:
        clean_client_name("x" * 101)

    assert refused.value.field == "client_name"


@pytest.mark.parametrize(
    "host",
    ["a-" * 995 + "_", "a." * 995 + "-", "1:" * 995 + "g", "a" * 1990 + "."],
    ids=["dashes", "dots", "colons", "trailing-dot"],
)
def test_a_hostile_host_is_judged_at_once(host: str) -> None:
    # A redirect URI has at most 2000 characters before its host is matched; the host pattern's runs are
    # bounded ({0,251}, {2,45}), so even the longest is judged in far less than a blink.
    assert_within(redirect_uri_problem, f"https://{host}/cb", 0.05)
    assert redirect_uri_problem(f"https://{host}/cb") is not None


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "a" + "-" * n + "!",  # a label that runs on and fails at its last character
        lambda n: "a" + "." * n,  # ends on a dot, which the pattern may not end with
        lambda n: ":" * n + "g",  # an address-like run that fails at its end
    ],
)
def test_checking_a_redirect_uris_host_is_linear_in_its_length(make):
    # The host comes from a client's registration. The URI is capped before the check; the pattern is
    # held to the time budget on hosts far longer than the cap, so the cap is not what keeps it fast.
    assert_linear_time(clients._HOST.fullmatch, make, large=256 * 1024)


def test_a_digest_is_the_sha256_hex_of_the_text() -> None:
    assert digest("code") == hashlib.sha256(b"code").hexdigest()
    assert digest("code") != digest("code ")


def test_a_client_record_reads_back_from_its_json_form() -> None:
    record = ClientRecord("mcp-1", "registered", ("https://a.example/cb",), 1.5, "Agent", "web")
    item = {**record.__dict__, "redirect_uris": list(record.redirect_uris)}

    assert client_record_from_json(item) == record
