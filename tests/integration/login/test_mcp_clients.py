"""How MCP clients become known to the dev identity provider (docs/login.md, "MCP clients"): RFC 7591
registration at ``/register`` (open, capped, public clients only, each refusal an RFC 7591 error) and
client ID metadata documents (an https ``client_id``, fetched through ``httpx.MockTransport`` here: no
test leaves the machine)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
import pytest

from memmy_kb.domain.mcp_auth.metadata_documents import CACHE_SECONDS
from memmy_local import tokens
from memmy_local.identity.provider import IdentityProvider
from memmy_local.identity.state import REGISTRATIONS_PER_HOUR
from tests.support.clock import Clock
from tests.support.mcp_oauth import pkce, redirect_params, register, sign_in_and_consent

RESOURCE = "http://127.0.0.1:18080/mcp"
CALLBACK = "http://127.0.0.1:33418/callback"
DOCUMENT_URL = "https://agent.example/oauth/client.json"
Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture(scope="module")
def key_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp-clients-key") / "key.pem"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def fetched() -> list[str]:
    return []


@pytest.fixture
def documents(fetched: list[str]) -> dict[str, Handler]:
    """What the (mocked) web answers for each metadata document URL; every fetch is noted in ``fetched``."""
    return {DOCUMENT_URL: lambda request: httpx.Response(200, json=document())}


def document(**over: object) -> dict[str, object]:
    return {"client_id": DOCUMENT_URL, "client_name": "Agent by URL", "redirect_uris": [CALLBACK],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none"} | over  # fmt: skip


@pytest.fixture
def idp(
    key_path: Path, tmp_path: Path, clock: Clock, documents: dict[str, Handler], fetched: list[str]
) -> Iterator[IdentityProvider]:
    def web(request: httpx.Request) -> httpx.Response:
        fetched.append(str(request.url))
        handler = documents.get(str(request.url))
        return handler(request) if handler else httpx.Response(404)

    key = tokens.load_signing_key(key_path)
    metadata_http = httpx.Client(transport=httpx.MockTransport(web))
    with IdentityProvider(
        key, port=0, state_dir=tmp_path, clock=clock, mcp_resource=RESOURCE, metadata_http=metadata_http
    ) as provider:
        yield provider


@pytest.fixture
def http(idp: IdentityProvider) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=idp.url, timeout=10) as client:
        yield client


def authorization_url(idp: IdentityProvider, client_id: str, challenge: str) -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": CALLBACK, "scope": "kb.search",
              "state": "s", "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
    return f"{idp.url}/authorize?{urlencode(params)}"


# -- registration ------------------------------------------------------------------------------------


def test_a_registration_is_a_public_client_for_kb_search_whatever_it_asked(http: httpx.Client) -> None:
    answer = register(http, token_endpoint_auth_method="client_secret_post", scope="openid kb.search")

    assert answer.status_code == 201, answer.text
    assert answer.headers["cache-control"] == "no-store"
    body = answer.json()
    assert body["client_id"].startswith("mcp-")
    assert "client_secret" not in body
    assert body["token_endpoint_auth_method"] == "none"
    assert (body["scope"], body["application_type"]) == ("kb.search", "native")
    assert body["grant_types"] == ["authorization_code", "refresh_token"]
    assert body["redirect_uris"] == [CALLBACK]
    assert body["client_name"] == "Test Agent"
    assert isinstance(body["client_id_issued_at"], int)


@pytest.mark.parametrize(
    ("metadata", "error", "says"),
    [
        ({"redirect_uris": ["http://agent.example/cb"]}, "invalid_redirect_uri", "neither an https URL"),
        ({"redirect_uris": ["https://agent.example/cb#frag"]}, "invalid_redirect_uri", "no fragment"),
        ({"redirect_uris": ["/relative/cb"]}, "invalid_redirect_uri", "with a host"),
        ({"redirect_uris": ["myapp://cb"]}, "invalid_redirect_uri", "neither an https URL"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "non-empty list"),
        ({"redirect_uris": "https://agent.example/cb"}, "invalid_redirect_uri", "non-empty list"),
        ({"client_name": "x" * 101}, "invalid_client_metadata", "at most 100 characters"),
        ({"client_name": 7}, "invalid_client_metadata", "must be a string"),
        ({"application_type": "desktop"}, "invalid_client_metadata", "'native' or 'web'"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata", "grant_types"),
        ({"response_types": ["token"]}, "invalid_client_metadata", "response_types"),
    ],
)
def test_bad_client_metadata_gets_a_clear_rfc_7591_error(
    http: httpx.Client, metadata: dict[str, object], error: str, says: str
) -> None:
    answer = register(http, **metadata)

    assert answer.status_code == 400
    assert answer.json()["error"] == error
    assert says in answer.json()["error_description"]


def test_a_body_that_is_not_a_json_object_or_too_large_is_refused(http: httpx.Client) -> None:
    form = http.post("/register", data={"redirect_uris": CALLBACK})
    array = http.post("/register", json=[CALLBACK])
    huge = http.post(
        "/register", json={"redirect_uris": [CALLBACK], "client_uri": "https://a.example/" + "x" * 20000}
    )

    for answer in (form, array):
        assert answer.status_code == 400
        assert answer.json()["error"] == "invalid_client_metadata"
        assert "JSON object" in answer.json()["error_description"]
    assert huge.status_code == 413
    assert huge.json()["error"] == "invalid_client_metadata"


def test_registrations_are_capped_per_hour_with_retry_after(http: httpx.Client, clock: Clock) -> None:
    for _ in range(REGISTRATIONS_PER_HOUR):
        assert register(http).status_code == 201

    refused = register(http)
    assert refused.status_code == 429
    assert refused.json()["error"] == "temporarily_unavailable"
    assert f"At most {REGISTRATIONS_PER_HOUR} clients" in refused.json()["error_description"]
    assert 0 < int(refused.headers["retry-after"]) <= 3600
    clock.skipped += 3601
    assert register(http).status_code == 201


def test_an_https_redirect_uri_is_matched_exactly_a_loopback_one_at_any_port(http: httpx.Client) -> None:
    client_id = register(http, redirect_uris=["https://agent.example/cb", CALLBACK]).json()["client_id"]

    def page(redirect_uri: str) -> int:
        _, challenge = pkce()
        params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
                  "code_challenge": challenge, "code_challenge_method": "S256"}  # fmt: skip
        return http.get("/authorize", params=params).status_code

    assert page("https://agent.example/cb") == 200
    assert page("http://127.0.0.1:51000/callback") == 200
    assert page("https://agent.example/cb/") == 400
    assert page("https://agent.example:8443/cb") == 400
    assert page("http://127.0.0.1:51000/other") == 400


# -- client ID metadata documents ----------------------------------------------------------------------


def test_a_client_named_by_its_metadata_document_gets_an_mcp_token(
    idp: IdentityProvider, http: httpx.Client, fetched: list[str]
) -> None:
    verifier, challenge = pkce()
    page = http.get(authorization_url(idp, DOCUMENT_URL, challenge))
    assert page.status_code == 200, page.text
    redirect = redirect_params(sign_in_and_consent(authorization_url(idp, DOCUMENT_URL, challenge), "alice"))
    answer = http.post("/token", data={"grant_type": "authorization_code", "code": redirect["code"],
                                       "redirect_uri": CALLBACK, "client_id": DOCUMENT_URL,
                                       "code_verifier": verifier, "resource": RESOURCE})  # fmt: skip

    assert answer.status_code == 200, answer.text
    claims = tokens.verify_token(
        answer.json()["access_token"],
        key=idp.key,
        issuer=idp.issuer,
        audience=RESOURCE,
        clock=idp.state.clock,
    )
    assert (claims["client_id"], claims["client_name"]) == (DOCUMENT_URL, "Agent by URL")
    assert fetched == [DOCUMENT_URL]  # once, then from the cache


def test_a_metadata_document_is_fetched_again_after_the_cache_time(
    idp: IdentityProvider, http: httpx.Client, clock: Clock, fetched: list[str]
) -> None:
    _, challenge = pkce()
    http.get(authorization_url(idp, DOCUMENT_URL, challenge))
    clock.skipped += CACHE_SECONDS - 5
    http.get(authorization_url(idp, DOCUMENT_URL, challenge))
    assert len(fetched) == 1
    clock.skipped += 10
    http.get(authorization_url(idp, DOCUMENT_URL, challenge))
    assert len(fetched) == 2


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda r: httpx.Response(404), "answered HTTP 404"),
        (lambda r: httpx.Response(302, headers={"location": "https://elsewhere.example/c.json"}), "HTTP 302"),
        (
            lambda r: httpx.Response(200, text="<html>", headers={"content-type": "text/html"}),
            "application/json",
        ),
        (
            lambda r: httpx.Response(200, json=document(client_id="https://agent.example/other")),
            "another client_id",
        ),
        (
            lambda r: httpx.Response(200, json=document(redirect_uris=["https://agent.example/cb"])),
            "is not supported by client",
        ),
        (
            lambda r: httpx.Response(200, json=document(token_endpoint_auth_method="client_secret_basic")),
            "public",
        ),
        (
            lambda r: httpx.Response(200, json=document(redirect_uris=["http://agent.example/cb"])),
            "redirect_uris",
        ),
        (
            lambda r: httpx.Response(
                200, content=b'{"a": "' + b"x" * 70000 + b'"}', headers={"content-type": "application/json"}
            ),
            "larger than 64 KB",
        ),
        (lambda r: (_ for _ in ()).throw(httpx.ConnectTimeout("slow", request=r)), "within 3 s"),
    ],
    ids=["404", "redirect", "html", "other-id", "not-this-redirect", "secret", "http", "too-big", "timeout"],
)
def test_a_metadata_document_that_cannot_be_used_refuses_the_sign_in_on_a_page(
    idp: IdentityProvider, http: httpx.Client, documents: dict[str, Handler], answer: Handler, says: str
) -> None:
    documents[DOCUMENT_URL] = answer
    _, challenge = pkce()
    page = http.get(authorization_url(idp, DOCUMENT_URL, challenge))

    assert page.status_code == 400
    assert "location" not in page.headers  # never a redirect to a client not known to be one
    assert says in page.text


def test_a_token_request_of_a_client_whose_document_is_gone_is_invalid_client(
    http: httpx.Client, documents: dict[str, Handler]
) -> None:
    documents.clear()
    answer = http.post(
        "/token", data={"grant_type": "refresh_token", "refresh_token": "x", "client_id": DOCUMENT_URL}
    )

    assert answer.json()["error"] == "invalid_client"
    assert "metadata document" in answer.json()["error_description"]
