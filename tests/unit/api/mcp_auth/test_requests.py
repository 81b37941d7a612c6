"""The event ↔ Authlib translation of the MCP authorization server (memmy_kb.api.mcp_auth.requests)."""

from __future__ import annotations

import pytest

from memmy_kb.api.mcp_auth.requests import Answer, HttpEvent, JsonEvent, OAuth2Event
from memmy_kb.api.mcp_endpoint.events import BadEvent
from tests.support.mcp_auth_events import ISSUER, auth_event


def test_a_get_carries_its_query_with_repeated_parameters_kept():
    event = HttpEvent.of(
        auth_event("GET", "/oauth/authorize", query=[("client_id", "c1"), ("resource", "a"), ("resource", "b")])
    )
    request = OAuth2Event.of(event, ISSUER)
    assert request.payload.client_id == "c1"
    assert request.payload.datalist["resource"] == ["a", "b"]
    assert request.args.getlist("resource") == ["a", "b"]
    assert request.uri.startswith(f"{ISSUER}/oauth/authorize?client_id=c1")
    assert request.method == "GET"


@pytest.mark.parametrize("encoded", [False, True])
def test_a_form_body_is_read_plain_or_base64(encoded: bool):
    event = auth_event(
        "POST", "/oauth/token", form={"grant_type": "refresh_token", "refresh_token": "r-1", "client_id": "c"},
        base64_body=encoded,
    )  # fmt: skip
    request = OAuth2Event.of(HttpEvent.of(event), ISSUER)
    assert request.form["refresh_token"] == "r-1"
    assert request.payload.grant_type == "refresh_token"
    assert request.payload.data.get("client_id") == "c"


def test_a_body_marked_base64_that_is_not_is_a_bad_event():
    event = auth_event("POST", "/oauth/token", form={"a": "b"})
    event["isBase64Encoded"] = True
    event["body"] = "%%% not base64"
    with pytest.raises(BadEvent, match="base64"):
        HttpEvent.of(event)


def test_a_body_that_is_not_a_form_gives_no_form_fields():
    event = auth_event("POST", "/oauth/token", json_body={"grant_type": "refresh_token"})
    assert OAuth2Event.of(HttpEvent.of(event), ISSUER).payload.grant_type is None


def test_headers_are_found_whatever_the_case():
    event = HttpEvent.of(auth_event("POST", "/oauth/revoke", headers={"Authorization": "Basic x"}))
    request = OAuth2Event.of(event, ISSUER)
    assert request.headers.get("Authorization") == "Basic x"
    assert "AUTHORIZATION" in request.headers


def test_registration_reads_the_json_body():
    event = HttpEvent.of(auth_event("POST", "/oauth/register", json_body={"redirect_uris": ["https://a.test/cb"]}))
    assert JsonEvent(event, ISSUER).payload.data == {"redirect_uris": ["https://a.test/cb"]}


def test_cookies_come_from_the_cookies_list_and_the_header():
    event = auth_event("GET", "/oauth/callback", cookies=["a=1", "b=2"], headers={"cookie": "c=3; a=9"})
    assert HttpEvent.of(event).cookies == {"a": "1", "b": "2", "c": "3"}


def test_the_source_address_and_domain_are_read():
    event = HttpEvent.of(auth_event("GET", "/oauth/authorize", source_ip="203.0.113.9", domain="x.test"))
    assert (event.source_ip, event.domain) == ("203.0.113.9", "x.test")


def test_an_oversized_body_is_refused():
    event = auth_event("POST", "/oauth/register", json_body={"x": "y" * 70_000})
    with pytest.raises(BadEvent, match="KB"):
        HttpEvent.of(event)


def test_an_authlib_json_answer_is_never_cached_and_a_redirect_has_a_settable_location():
    answer = Answer.of(200, {"access_token": "t"}, [("Content-Type", "application/json")])
    assert answer.headers["cache-control"] == "no-store"
    assert answer.proxy_result()["body"] == '{"access_token": "t"}'
    redirect = Answer.of(302, "", [("Location", "https://c.test/cb?code=x")])
    redirect.location = f"{redirect.location}&iss=x"
    assert redirect.proxy_result()["headers"]["location"] == "https://c.test/cb?code=x&iss=x"


def test_cookies_set_go_in_the_proxy_results_cookies():
    answer = Answer(302, {"location": "https://idp.test/"}, cookies=["n=v; Secure"])
    assert answer.proxy_result()["cookies"] == ["n=v; Secure"]
