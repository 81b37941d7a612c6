"""The local gateway over real HTTP: the template's routes, and the JWT authorizer's claims and refusals."""

from __future__ import annotations

import base64
import json
import time
from http import HTTPStatus
from pathlib import Path
from typing import Any

import httpx
import pytest

from memmy_local import tokens
from tests.support.gateway_functions import AUDIENCE, ISSUER, bearer, echoed

# ------------------------------------------------------------------------------------------ routing


def test_path_parameters_are_matched_and_decoded(client: httpx.Client, token: str) -> None:
    seen = echoed(client.get("/items/kb%201/members/bob%40example.com", headers=bearer(token)))

    event = seen["event"]
    assert event["routeKey"] == "GET /items/{item_id}/members/{user_id}"
    assert event["pathParameters"] == {"item_id": "kb 1", "user_id": "bob@example.com"}
    assert event["rawPath"] == "/items/kb%201/members/bob%40example.com"


def test_literal_segment_beats_parameter_and_non_dict_result_becomes_json(
    client: httpx.Client, token: str
) -> None:
    resp = client.get("/items/special", headers=bearer(token))

    assert resp.status_code == HTTPStatus.OK
    assert resp.headers["content-type"] == "application/json"
    assert resp.json() == {"handler": "special", "route": "GET /items/special"}


def test_method_is_part_of_the_route(client: httpx.Client, token: str) -> None:
    resp = client.post("/items", headers=bearer(token), json={"name": "x"})

    assert resp.status_code == HTTPStatus.CREATED
    assert resp.headers["x-route"] == "POST /items"


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/nowhere"), ("DELETE", "/items"), ("GET", "/items/"), ("GET", "/items/a/b"), ("GET", "/")],
)
def test_unknown_route_is_404_before_authorization(
    client: httpx.Client, invocations: list[dict[str, Any]], method: str, path: str
) -> None:
    resp = client.request(method, path)

    assert resp.status_code == HTTPStatus.NOT_FOUND
    assert resp.json() == {"message": "Not Found"}
    assert resp.headers["apigw-requestid"]
    assert invocations == []


def test_query_string_is_raw_and_parsed_with_duplicates_joined(client: httpx.Client, token: str) -> None:
    seen = echoed(client.get("/items?folder_id=f%201&tag=a&tag=b&empty=", headers=bearer(token)))

    event = seen["event"]
    assert event["rawQueryString"] == "folder_id=f%201&tag=a&tag=b&empty="
    assert event["queryStringParameters"] == {"folder_id": "f 1", "tag": "a,b", "empty": ""}


def test_request_without_query_or_params_omits_them(client: httpx.Client, token: str) -> None:
    event = echoed(client.get("/items", headers=bearer(token)))["event"]

    assert event["rawQueryString"] == ""
    assert "queryStringParameters" not in event
    assert "pathParameters" not in event
    assert "body" not in event
    assert event["isBase64Encoded"] is False


# -------------------------------------------------------------------------------------- authorizer


def test_claims_reach_the_handler_as_strings(client: httpx.Client, token: str) -> None:
    event = echoed(client.get("/items", headers=bearer(token)))["event"]

    authorizer = event["requestContext"]["authorizer"]
    claims = authorizer["jwt"]["claims"]
    assert authorizer["jwt"]["scopes"] is None
    assert claims["sub"] == "alice"
    assert claims["iss"] == ISSUER
    assert claims["aud"] == AUDIENCE
    assert claims["email_verified"] == "true"
    assert claims["phone_number_verified"] == "true"
    assert claims["phone_number"] == "+15550100"
    assert claims["exp"].isdigit()
    assert all(isinstance(value, str) for value in claims.values())


def test_bare_token_is_accepted_like_api_gateway(client: httpx.Client, token: str) -> None:
    resp = client.get("/items", headers={"Authorization": token})

    assert resp.status_code == HTTPStatus.OK


@pytest.fixture(scope="module")
def forged_tokens(key_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str | None]:
    now = int(time.time())
    unsigned_claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    unsigned = (
        base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode()).rstrip(b"=").decode()
        + "."
        + base64.urlsafe_b64encode(json.dumps(unsigned_claims).encode()).rstrip(b"=").decode()
        + "."
    )
    return {
        "missing": None,
        "empty bearer": "Bearer",
        "garbage": "Bearer not.a.jwt",
        "other key": "Bearer "
        + tokens.issue_token("alice", key_path=tmp_path_factory.mktemp("other") / "other.pem"),
        "expired": "Bearer " + tokens.issue_token("alice", key_path=key_path, ttl_seconds=-5),
        "wrong audience": "Bearer " + tokens.issue_token("alice", key_path=key_path, audience="other-api"),
        "wrong issuer": "Bearer "
        + tokens.issue_token("alice", key_path=key_path, issuer="https://evil.example"),
        "alg none": "Bearer " + unsigned,
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "empty bearer",
        "garbage",
        "other key",
        "expired",
        "wrong audience",
        "wrong issuer",
        "alg none",
    ],
)
def test_bad_token_is_401_and_the_handler_is_not_invoked(
    client: httpx.Client, invocations: list[dict[str, Any]], forged_tokens: dict[str, str | None], case: str
) -> None:
    authorization = forged_tokens[case]
    headers = {"Authorization": authorization} if authorization is not None else {}

    resp = client.post("/items", headers=headers, json={"name": "x"})

    assert resp.status_code == HTTPStatus.UNAUTHORIZED
    assert resp.json() == {"message": "Unauthorized"}
    assert resp.headers["www-authenticate"].startswith("Bearer")
    assert invocations == []


def test_route_with_authorizer_none_needs_no_token(client: httpx.Client) -> None:
    event = echoed(client.get("/health"))["event"]

    assert "authorizer" not in event["requestContext"]
