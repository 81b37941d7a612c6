"""The shared resolver: path parameters reach a route percent-decoded exactly once."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import pytest
from pydantic import BaseModel

from memmy_kb.api.resolver import UserId, build_resolver
from tests.support.events import FakeLambdaContext, http_event


def _echo_app() -> Any:
    app = build_resolver()

    @app.get("/kb/<kb_id>/members/<user_id>")
    def echo(kb_id: str, user_id: UserId) -> dict[str, str]:
        return {"kb_id": kb_id, "user_id": user_id}

    return app


@pytest.mark.parametrize(
    "user_id",
    ["auth0|5f7c8ec7c33c6c004bbafe82", "google-oauth2|1083", "张 三", "a/b", "100%", "%2F-looking", "plain"],
)
def test_an_encoded_segment_arrives_decoded(user_id: str) -> None:
    # Given a client that quotes the id as the SDK does (nothing safe), as API Gateway passes it on (rawPath)
    path = f"/kb/kb_1/members/{quote(user_id, safe='')}"
    # When the route runs
    reply = _echo_app().resolve(http_event("GET", path), FakeLambdaContext())
    # Then it sees the id itself, decoded once (a literal "%2F" in the id stays "%2F")
    assert reply["statusCode"] == HTTPStatus.OK, reply
    assert json.loads(reply["body"]) == {"kb_id": "kb_1", "user_id": user_id}


def test_a_segment_is_decoded_once_not_twice() -> None:
    reply = _echo_app().resolve(http_event("GET", "/kb/kb_1/members/x%2541"), FakeLambdaContext())
    assert json.loads(reply["body"])["user_id"] == "x%41"


def test_storage_that_is_unavailable_answers_503_with_retry_after_not_500() -> None:
    from memmy_kb.domain.storage import StoreUnavailable

    app = build_resolver()

    @app.get("/busy")
    def busy() -> dict[str, str]:
        raise StoreUnavailable("table", "ProvisionedThroughputExceededException")

    @app.get("/broken")
    def broken() -> dict[str, str]:
        raise RuntimeError("a bug")

    reply = app.resolve(http_event("GET", "/busy"), FakeLambdaContext())
    assert reply["statusCode"] == HTTPStatus.SERVICE_UNAVAILABLE
    assert reply["headers"]["Retry-After"] == "2"
    assert json.loads(reply["body"])["error"]["code"] == "storage_unavailable"
    # A bug stays a 500
    reply = app.resolve(http_event("GET", "/broken"), FakeLambdaContext())
    assert (reply["statusCode"], json.loads(reply["body"])["error"]["code"]) == (500, "internal_error")


class _Named(BaseModel):
    name: str


def _body_app() -> Any:
    app = build_resolver()

    @app.post("/things")
    def create(body: _Named) -> dict[str, str]:
        return {"name": body.name}

    return app


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "Application/JSON", "APPLICATION/JSON; Charset=UTF-8", 'application/Json;charset="UTF8"'],
)
def test_a_json_type_in_any_case_reaches_the_route(content_type: str) -> None:
    # Given a body typed JSON in a case other than lower (media types are case-insensitive)
    event = http_event("POST", "/things", body={"name": "资料"}, headers={"content-type": content_type})
    # When the route's validation reads it (Powertools matches the type case-sensitively)
    reply = _body_app().resolve(event, FakeLambdaContext())
    # Then the route runs on the body, and the caller's event is left as it was
    assert (reply["statusCode"], json.loads(reply["body"])) == (HTTPStatus.OK, {"name": "资料"}), reply
    assert event["headers"]["content-type"] == content_type


@pytest.mark.parametrize(
    ("content_type", "body", "status", "code"),
    [
        ("Text/Plain", '{"name": "x"}', HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
        ("Application/JSON; Charset=Latin-1", '{"name": "x"}', HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type"),
        ("Text/Plain", "", HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
        ("Application/JSON", "", HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error"),
    ],
)
def test_another_type_or_no_body_is_a_4xx_in_the_error_shape_not_500(
    content_type: str, body: str, status: int, code: str
) -> None:
    event = http_event("POST", "/things", body=body, headers={"content-type": content_type})
    reply = _body_app().resolve(event, FakeLambdaContext())
    assert (reply["statusCode"], json.loads(reply["body"])["error"]["code"]) == (status, code), reply


class Named(BaseModel):
    name: str


def test_every_answer_carries_chinese_as_utf8_text_not_escapes() -> None:
    # A route that returns a model (Powertools serialises it), one that builds its response (pydantic
    # writes it) and an error: a client reads the same UTF-8 text from each, GET or POST alike.
    from memmy_kb.api.resolver import error_response, json_response

    app = build_resolver()

    @app.get("/returned")
    def returned() -> Named:
        return Named(name="产品资料")

    @app.post("/built")
    def built() -> Any:
        return json_response(HTTPStatus.CREATED, Named(name="产品资料"))

    @app.get("/refused")
    def refused() -> Any:
        return error_response(HTTPStatus.NOT_FOUND, "kb_not_found", "没有这个知识库")

    bodies = [
        app.resolve(http_event(method, path), FakeLambdaContext())["body"]
        for method, path in (("GET", "/returned"), ("POST", "/built"), ("GET", "/refused"))
    ]
    assert bodies[:2] == ['{"name":"产品资料"}'] * 2
    assert bodies[2] == '{"error":{"code":"kb_not_found","message":"没有这个知识库"}}'


def test_a_lone_surrogate_is_escaped_where_utf8_cannot_carry_it() -> None:
    from memmy_kb.api.resolver import json_text

    assert json_text({"name": "产品\ud800"}) == '{"name":"\\u4ea7\\u54c1\\ud800"}'
    assert json_text({"name": "产品"}) == '{"name":"产品"}'
