"""Every route that takes a body answers malformed requests with a 4xx in the error shape, never a 500."""

from __future__ import annotations

import base64
import re
from http import HTTPStatus

import pytest

from memmy_local.template import http_routes, load_template
from tests.support.events import claims_for
from tests.support.hostile_bodies import SHAPES
from tests.support.linear_time import assert_linear_time

# Not POST /mcp: the remote MCP endpoint reads no body before its own token check, and answers in
# JSON-RPC's shapes, not this error shape (tests/integration/mcp/). Nor the MCP authorization server's
# /oauth/ routes: they answer in OAuth's shapes (RFC 6749, 7591) or with a page, checked below.
BODY_ROUTES = sorted(
    (r.method, re.sub(r"\{\w+\}", "x_1", r.path))
    for r in http_routes(load_template())
    if r.method in ("POST", "PUT", "PATCH") and r.path != "/mcp" and not r.path.startswith("/oauth/")
)
OAUTH_BODY_ROUTES = sorted(
    (r.method, r.path) for r in http_routes(load_template()) if r.method == "POST" and r.path.startswith("/oauth/")
)
MALFORMED = {
    "text-plain": ({"content-type": "text/plain;charset=UTF-8"}, '{"name": "x"}', HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    "text-plain-capitals": ({"content-type": "Text/Plain"}, '{"name": "x"}', HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    "form": ({"content-type": "application/x-www-form-urlencoded"}, "name=x", HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    "json-suffix": ({"content-type": "application/merge-patch+json"}, '{"name": "x"}', HTTPStatus.UNSUPPORTED_MEDIA_TYPE),
    "deep": ({}, '{"name": ' + "[" * 5000 + "]" * 5000 + "}", HTTPStatus.UNPROCESSABLE_ENTITY),
    "huge-int": ({}, '{"query": "q", "limit": ' + "9" * 5000 + "}", HTTPStatus.UNPROCESSABLE_ENTITY),
    "array": ({}, '[{"name": "x", "query": "q", "enabled": true}]', HTTPStatus.UNPROCESSABLE_ENTITY),
    "flood": ({}, '{"name": "' + "x" * 70_000 + '"}', HTTPStatus.REQUEST_ENTITY_TOO_LARGE),
}


@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_a_malformed_body_is_a_4xx_in_the_error_shape(service, method, path, case):
    headers, body, status = MALFORMED[case]
    reply = service.call(method, path, "alice", body=body, headers=headers)
    assert reply.status == status, reply.body
    assert set(reply.body) == {"error"}
    assert reply.body["error"]["code"]
    assert reply.body["error"]["message"]


@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize(("method", "path"), OAUTH_BODY_ROUTES)
def test_the_authorization_server_answers_a_malformed_body_with_a_4xx_in_oauths_shape_or_a_page(
    service, method, path, case
):
    headers, body, _ = MALFORMED[case]
    reply = service.call(method, path, None, body=body, headers=headers)
    assert HTTPStatus.BAD_REQUEST <= reply.status < HTTPStatus.INTERNAL_SERVER_ERROR, reply.body
    if isinstance(reply.body, str):  # the consent's answer to a browser: a page saying why
        assert "<html" in reply.body.lower()
    else:
        assert isinstance(reply.body["error"], str), reply.body
        assert reply.body["error"], reply.body


# Media types are case-insensitive: each spelling is JSON, whatever the case of the type or the charset.
JSON_SPELLINGS = ["Application/JSON", "APPLICATION/JSON; Charset=UTF-8", "application/Json;charset=\"utf8\""]


@pytest.mark.parametrize("content_type", JSON_SPELLINGS)
@pytest.mark.parametrize(("method", "path"), BODY_ROUTES)
def test_a_json_type_in_any_case_reaches_the_route_never_a_5xx_or_415(service, method, path, content_type):
    body = '{"name": "x", "query": "q", "enabled": true}'
    reply = service.call(method, path, "alice", body=body, headers={"content-type": content_type})
    assert reply.status < HTTPStatus.INTERNAL_SERVER_ERROR, reply.body
    assert reply.status != HTTPStatus.UNSUPPORTED_MEDIA_TYPE, reply.body


@pytest.mark.parametrize("content_type", JSON_SPELLINGS)
def test_a_kb_created_with_a_capitalised_json_type_is_created(service, content_type):
    reply = service.call("POST", "/knowledge-bases", "alice", body='{"name": "资料"}', headers={"content-type": content_type})
    assert (reply.status, reply.body["name"]) == (HTTPStatus.CREATED, "资料")


@pytest.mark.parametrize("content_type", ["Text/Plain", "Application/JSON", "text/html"])
def test_an_empty_body_of_any_type_is_422_not_500(service, content_type):
    reply = service.call("POST", "/knowledge-bases", "alice", body="", headers={"content-type": content_type})
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")


def test_invalid_utf8_bytes_are_422(service):
    body = base64.b64encode(b'{"name": "\xff"}').decode()
    event_headers = {"content-type": "application/json"}
    reply = service.call("POST", "/knowledge-bases", "alice", body=body, headers=event_headers, base64_body=True)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error")
    assert service.call("GET", "/knowledge-bases", "alice").body == {"items": []}


@pytest.mark.parametrize("limit", [True, "5", 5.0])
def test_a_number_is_not_coerced_from_a_boolean_or_a_string(service, limit):
    reply = service.call("POST", "/recall", "alice", body={"query": "q", "limit": limit})
    assert reply.status == HTTPStatus.UNPROCESSABLE_ENTITY, reply.body


@pytest.mark.parametrize("sub", ["x" * 3000, "auth0|\ud800", "名" * 600])
@pytest.mark.parametrize(("method", "path"), [("PUT", "/me"), ("POST", "/knowledge-bases"), ("POST", "/recall")])
def test_a_subject_dynamodb_could_not_store_is_401_not_500(service, sub, method, path):
    claims = claims_for("placeholder", name="X", email="x@example.com")
    reply = service.call(method, path, body={"name": "x", "query": "q"}, claims={**claims, "sub": sub})
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.UNAUTHORIZED, "invalid_subject")


def test_claims_of_kilobytes_and_odd_types_are_dropped_and_me_still_registers(service):
    claims = {
        **claims_for("alice", name="Alice"),
        "email": "a" * 5000 + "@example.com",
        "email_verified": "true",
        "phone_number": "1" * 2000,
        "phone_number_verified": "true",
        "iat": "not a time",
    }
    reply = service.call("PUT", "/me", claims=claims)
    assert reply.status == HTTPStatus.OK, reply.body
    assert (reply.body["email"], reply.body["phone"], reply.body["display_name"]) == (None, None, "Alice")


def test_an_invocation_with_no_time_left_answers_503_without_calling_memos(service):
    # Given a create whose invocation has 300 ms left (less than the margin kept for answering)
    reply = service.call("POST", "/knowledge-bases", "alice", body={"name": "资料"}, remaining_ms=300)
    # Then the documented 503, in the error shape, and MemOS never asked (so nothing is left behind)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_unavailable")
    assert service.memos.calls("/create/knowledgebase") == 0
    assert service.call("GET", "/knowledge-bases", "alice").body == {"items": []}


def test_a_recall_with_no_time_left_fails_closed(service):
    assert service.call("POST", "/knowledge-bases", "alice", body={"name": "资料"}).status == HTTPStatus.CREATED
    reply = service.call("POST", "/recall", "alice", body={"query": "q"}, remaining_ms=300)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.SERVICE_UNAVAILABLE, "recall_unavailable")
    assert service.memos.calls("/search/memory") == 0


def test_a_63_kb_body_of_escaped_quotes_is_a_quick_422_from_the_recall_handler(service):
    # Given a signed-in user's recall whose body is one unterminated string of escaped quotes (the shape
    # that held a Lambda 12 s before its 422), and the same shape in 1 KB
    make = SHAPES["unterminated escaped quotes"]

    def recall(body: str) -> object:
        return service.call("POST", "/recall", "alice", body=body, headers={"content-type": "application/json"})

    # Then the 63 KB body costs at most its share of the 1 KB one's time (linear), with room for noise
    assert_linear_time(recall, make, large=63 * 1024)
    # And it is the documented 422 in the error shape, with MemOS never asked
    reply = recall(make(63 * 1024))
    assert (reply.status, set(reply.body), reply.body["error"]["code"]) == (
        HTTPStatus.UNPROCESSABLE_ENTITY, {"error"}, "validation_error"
    )
    assert service.memos.calls("/search/memory") == 0
