"""The dev identity provider's rules for MCP clients (memmy_local.identity.clients, .resources): which
redirect URIs a client may have and which a request's matches, the name shown on the consent page, and
which resource (RFC 8707) a request may name."""

from __future__ import annotations

import pytest

from memmy_local.identity.clients import (
    REGISTERED,
    ClientMetadataProblem,
    ClientRecord,
    McpClient,
    clean_client_name,
    origin,
    redirect_uri_matches,
    redirect_uri_problem,
)
from memmy_local.identity.records import PublicClient
from memmy_local.identity.resources import InvalidTargetError, authorization_resource, check_token_resource
from tests.support.linear_time import assert_within

RESOURCE = "http://127.0.0.1:8080/mcp"
MCP = McpClient(ClientRecord("mcp-1", REGISTERED, ("http://127.0.0.1:5000/cb",), 0.0, "Agent"))


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


def test_an_mcp_client_is_public_code_and_refresh_with_kb_search_only() -> None:
    assert MCP.get_allowed_scope("openid profile email kb.search") == "kb.search"
    assert MCP.get_allowed_scope(None) == "kb.search"
    assert [MCP.check_grant_type(g) for g in ("authorization_code", "refresh_token", "client_credentials")] == [
        True, True, False]  # fmt: skip
    assert MCP.check_grant_type("urn:ietf:params:oauth:grant-type:device_code") is False
    assert MCP.check_endpoint_auth_method("none", "token") is True
    assert MCP.check_endpoint_auth_method("client_secret_post", "token") is False


@pytest.mark.parametrize(
    ("client", "requested", "granted"),
    [(MCP, [], RESOURCE), (MCP, [RESOURCE], RESOURCE), (PublicClient(), [], None)],
)
def test_an_authorization_request_is_for_the_mcp_resource_or_the_desktops_api(
    client: object, requested: list[str], granted: str | None
) -> None:
    assert authorization_resource(client, requested, RESOURCE) == granted


@pytest.mark.parametrize(
    ("client", "requested", "mcp_resource"),
    [
        (MCP, ["http://127.0.0.1:8080/api"], RESOURCE),
        (MCP, [RESOURCE + "/"], RESOURCE),  # compared exactly
        (MCP, [RESOURCE, RESOURCE], RESOURCE),
        (MCP, [], None),  # a provider that serves no MCP resource
        (PublicClient(), [RESOURCE], RESOURCE),
    ],
)
def test_any_other_resource_is_invalid_target(
    client: object, requested: list[str], mcp_resource: str | None
) -> None:
    with pytest.raises(InvalidTargetError) as refused:
        authorization_resource(client, requested, mcp_resource)

    assert refused.value.error == "invalid_target"


def test_a_token_request_may_repeat_its_grants_resource_or_name_none() -> None:
    check_token_resource([], RESOURCE)
    check_token_resource([RESOURCE], RESOURCE)
    check_token_resource([], None)
    for requested, granted in [
        ([RESOURCE], None),
        (["https://x.example/mcp"], RESOURCE),
        ([RESOURCE] * 2, RESOURCE),
    ]:
        with pytest.raises(InvalidTargetError):
            check_token_resource(requested, granted)


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
    from memmy_local.identity import clients
    from tests.support.linear_time import assert_linear_time

    assert_linear_time(clients._HOST.fullmatch, make, large=256 * 1024)
