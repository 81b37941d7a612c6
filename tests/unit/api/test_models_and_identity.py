"""Names, identity from claims, identifier normal forms and the error shape, without AWS or MemOS."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest
from pydantic import ValidationError

from memmy_kb.api.identity import caller_id, verified_claims
from memmy_kb.api.models.knowledge_bases import CreateKnowledgeBaseRequest
from memmy_kb.api.resolver import build_resolver
from memmy_kb.domain.directory import normalise_email, normalise_phone
from memmy_kb.errors import Forbidden, Unauthorized, kb_not_found
from tests.support.events import FakeLambdaContext, claims_for, http_event


@pytest.mark.parametrize(
    ("raw", "clean"), [("产品资料", "产品资料"), ("  trimmed  ", "trimmed"), ("x" * 100, "x" * 100)]
)
def test_valid_names_are_trimmed(raw, clean):
    assert CreateKnowledgeBaseRequest(name=raw).name == clean


@pytest.mark.parametrize(
    "raw", ["", "   ", "x" * 101, "tab\there", "zero\u200bwidth", "bidi\u202eflip", "nul\x00"]
)
def test_invalid_names_are_refused(raw):
    with pytest.raises(ValidationError):
        CreateKnowledgeBaseRequest(name=raw)


def test_caller_is_the_verified_sub_only():
    event = http_event(
        "GET", "/knowledge-bases", claims=claims_for("alice"), headers={"x-user-id": "mallory"}
    )
    event["body"] = json.dumps({"user_id": "mallory"})
    assert caller_id(event) == "alice"


@pytest.mark.parametrize("claims", [None, {}, {"sub": ""}, {"sub": "  "}, {"sub": 42}])
def test_no_sub_is_unauthorized(claims):
    with pytest.raises(Unauthorized):
        caller_id(http_event("GET", "/x", claims=claims))


def test_only_verified_email_and_phone_are_kept():
    claims = claims_for("u1", name=" Wang ", email="w@example.com", phone="+8613800138000", iat=1_800_000_000)
    assert verified_claims(http_event("PUT", "/me", claims=claims)).__dict__ == {
        "user_id": "u1",
        "name": "Wang",
        "email": "w@example.com",
        "phone": "+8613800138000",
        "issued_at": 1_800_000_000,
    }
    claims.update(email_verified="false", phone_number_verified="False")
    unverified = verified_claims(http_event("PUT", "/me", claims=claims))
    assert (unverified.email, unverified.phone) == (None, None)


def test_boolean_verified_flags_are_accepted_too():
    claims = {"sub": "u", "email": "a@b.co", "email_verified": True}
    assert verified_claims(http_event("PUT", "/me", claims=claims)).email == "a@b.co"


@pytest.mark.parametrize(
    ("raw", "e164"),
    [
        ("13800138000", "+8613800138000"),
        ("138 0013 8000", "+8613800138000"),
        ("+86 138-0013-8000", "+8613800138000"),
        ("008613800138000", "+8613800138000"),
        ("+1 650 253 0000", "+16502530000"),
        ("12345", None),
        ("not a phone", None),
    ],
)
def test_phones_are_normalised_to_e164_with_china_as_default(raw, e164):
    assert normalise_phone(raw) == e164


@pytest.mark.parametrize(
    ("raw", "clean"), [(" Alice@Example.COM ", "alice@example.com"), ("nope", None), ("a@b", None)]
)
def test_emails_are_lower_cased(raw, clean):
    assert normalise_email(raw) == clean


def _app_with(error: Exception):
    app = build_resolver()

    @app.get("/boom")
    def boom():
        raise error

    return app


@pytest.mark.parametrize(
    ("error", "status", "code"),
    [
        (kb_not_found(), HTTPStatus.NOT_FOUND, "kb_not_found"),
        (Forbidden("Only the owner may do this."), HTTPStatus.FORBIDDEN, "forbidden"),
        (RuntimeError("secret detail"), HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error"),
    ],
)
def test_errors_map_to_one_shape(error, status, code):
    reply = _app_with(error).resolve(http_event("GET", "/boom", claims=claims_for("u")), FakeLambdaContext())
    body = json.loads(reply["body"])
    assert reply["statusCode"] == status
    assert body["error"]["code"] == code
    assert "secret detail" not in reply["body"]


def test_unknown_route_uses_the_error_shape():
    reply = build_resolver().resolve(http_event("GET", "/nowhere"), FakeLambdaContext())
    assert reply["statusCode"] == HTTPStatus.NOT_FOUND
    assert json.loads(reply["body"])["error"]["code"] == "route_not_found"


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("  Alice   Wang ", "Alice Wang"),
        ("Bob\u202eeciffO", "Bob eciffO"),
        ("Carol\n(IT admin)", "Carol (IT admin)"),
        ("\u200b\u200b", None),
        ("名" * 300, "名" * 100),
    ],
)
def test_display_names_are_one_visible_line(raw, shown):
    claims = {"sub": "u", "name": raw}
    assert verified_claims(http_event("PUT", "/me", claims=claims)).name == shown
