"""What the MCP authorization server refuses, through ``functions/mcp_auth/app.py`` on moto with the real
adapters and the dev identity provider: a callback or a consent from another browser, a consent answered
twice, a code used twice, a wrong PKCE verifier, another resource, a denial, a redirect URI that is not the
client's, and the login provider's refusal."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from tests.support.mcp_auth_flow import CALLBACK, ISSUER, RESOURCE, AuthFlow, query_of


@pytest.fixture
def client_id(auth: AuthFlow) -> str:
    return auth.register("Claude")


def test_a_callback_from_another_browser_is_refused(auth: AuthFlow, client_id: str):
    sign, reply = auth.authorize(client_id)
    back = auth.sign_in(reply.location, "alice")
    for cookie in (None, "a-cookie-of-another-browser"):
        page = auth.callback(back, cookie)
        assert page.status == HTTPStatus.FORBIDDEN
        assert "另一个浏览器" in page.body
        assert "consent" not in page.body
    assert auth.callback(back, sign.cookie).status == HTTPStatus.OK  # the right browser still can


def test_a_consent_from_another_browser_or_answered_twice_is_refused(auth: AuthFlow, client_id: str):
    sign, reply = auth.authorize(client_id)
    page = auth.callback(auth.sign_in(reply.location, "alice"), sign.cookie)
    assert auth.consent(page, "another-browser").status == HTTPStatus.FORBIDDEN
    first = auth.consent(page, sign.cookie)
    assert first.status == HTTPStatus.FOUND
    again = auth.consent(page, sign.cookie)
    assert again.status == HTTPStatus.BAD_REQUEST
    assert "location" not in again.headers


def test_a_code_is_spent_once(auth: AuthFlow, client_id: str):
    sign, back = auth.code_for("alice", client_id)
    assert auth.exchange(sign, back["code"]).status == HTTPStatus.OK
    again = auth.exchange(sign, back["code"])
    assert (again.status, again.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_grant")


def test_a_wrong_pkce_verifier_is_refused_and_spends_the_code(auth: AuthFlow, client_id: str):
    sign, back = auth.code_for("alice", client_id)
    wrong = auth.exchange(sign, back["code"], code_verifier="x" * 64)
    assert wrong.status == HTTPStatus.BAD_REQUEST
    assert wrong.json()["error"] == "invalid_grant"
    assert auth.exchange(sign, back["code"]).status == HTTPStatus.BAD_REQUEST


def test_an_authorization_request_without_pkce_goes_back_with_invalid_request(auth: AuthFlow, client_id: str):
    reply = auth.call("GET", "/oauth/authorize", query={"response_type": "code", "client_id": client_id,
                                                          "redirect_uri": CALLBACK, "state": "s"})  # fmt: skip
    back = query_of(reply.location)
    assert (back["error"], back["state"], back["iss"]) == ("invalid_request", "s", ISSUER)


@pytest.mark.parametrize("resources", [["https://other.example/mcp"], [RESOURCE, "https://other.example/mcp"]])
def test_another_resource_is_invalid_target_at_the_client_with_iss(auth: AuthFlow, client_id: str, resources):
    extra = [("resource", r) for r in resources]
    _, reply = auth.authorize(client_id, extra=extra)
    assert reply.status == HTTPStatus.FOUND
    back = query_of(reply.location)
    assert (back["error"], back["state"], back["iss"]) == ("invalid_target", "st-1", ISSUER)
    assert not reply.cookies


def test_a_token_request_for_another_resource_is_invalid_target(auth: AuthFlow, client_id: str):
    sign, back = auth.code_for("alice", client_id, resource=RESOURCE)
    reply = auth.exchange(sign, back["code"], resource="https://other.example/mcp")
    assert (reply.status, reply.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_target")


def test_deny_goes_back_with_access_denied_state_and_iss(auth: AuthFlow, client_id: str):
    sign, reply = auth.authorize(client_id)
    page = auth.callback(auth.sign_in(reply.location, "alice"), sign.cookie)
    answer = auth.consent(page, sign.cookie, decision="deny")
    back = query_of(answer.location)
    assert answer.location.startswith(CALLBACK)
    assert (back["error"], back["state"], back["iss"]) == ("access_denied", "st-1", ISSUER)
    assert "code" not in back


def test_the_login_providers_refusal_goes_back_as_access_denied(auth: AuthFlow, client_id: str):
    sign, reply = auth.authorize(client_id)
    state = query_of(reply.location)["state"]
    answer = auth.callback({"error": "access_denied", "state": state}, sign.cookie)
    back = query_of(answer.location)
    assert (back["error"], back["state"], back["iss"]) == ("access_denied", "st-1", ISSUER)


def test_a_redirect_uri_not_the_clients_gets_a_page_not_a_redirect(auth: AuthFlow, client_id: str):
    _, reply = auth.authorize(client_id, redirect_uri="https://evil.example/cb")
    assert reply.status == HTTPStatus.BAD_REQUEST
    assert "location" not in reply.headers
    assert reply.headers["content-type"].startswith("text/html")
    assert "evil.example" not in reply.headers["content-security-policy"]


def test_an_unknown_client_gets_a_page_in_the_browsers_language(auth: AuthFlow):
    reply = auth.call("GET", "/oauth/authorize", query={"response_type": "code", "client_id": "mcp-nobody",
                                                          "redirect_uri": CALLBACK},
                      headers={"accept-language": "en-US,en;q=0.9"})  # fmt: skip
    assert reply.status == HTTPStatus.BAD_REQUEST
    assert 'lang="en"' in reply.body
    assert "location" not in reply.headers


def test_a_registration_that_is_not_json_is_refused_with_a_sentence(auth: AuthFlow):
    reply = auth.call("POST", "/oauth/register", form={"redirect_uris": CALLBACK})
    assert reply.status == HTTPStatus.BAD_REQUEST
    assert reply.json()["error"] == "invalid_client_metadata"
    hostile = auth.call("POST", "/oauth/register", json_body={"redirect_uris": ["http://evil.example/cb"]})
    assert (hostile.status, hostile.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_redirect_uri")


def test_a_registration_over_16_kb_is_413(auth: AuthFlow):
    body = {"redirect_uris": [CALLBACK], "client_name": "x", "padding": "y" * 17_000}
    reply = auth.call("POST", "/oauth/register", json_body=body)
    assert (reply.status, reply.json()["error"]) == (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_client_metadata")


def test_registrations_past_the_hours_cap_from_one_address_are_429_with_retry_after(auth: AuthFlow):
    body = {"client_name": "Agent", "redirect_uris": [CALLBACK]}
    statuses = [auth.call("POST", "/oauth/register", json_body=body).status for _ in range(20)]
    assert statuses == [HTTPStatus.CREATED] * 20
    refused = auth.call("POST", "/oauth/register", json_body=body)
    assert (refused.status, refused.json()["error"]) == (HTTPStatus.TOO_MANY_REQUESTS, "temporarily_unavailable")
    assert 0 < int(refused.headers["retry-after"]) <= 3600
    elsewhere = AuthFlow(ISSUER, RESOURCE, source_ip="203.0.113.50")
    assert elsewhere.call("POST", "/oauth/register", json_body=body).status == HTTPStatus.CREATED


def test_parameters_that_are_not_utf_8_are_400_invalid_request(auth: AuthFlow):
    event_query = "response_type=code&client_id=%ff%fe"
    reply = auth.call("GET", "/oauth/authorize", raw_query=event_query)
    assert (reply.status, reply.json()["error"]) == (HTTPStatus.BAD_REQUEST, "invalid_request")
    assert "UTF-8" in reply.json()["error_description"]
