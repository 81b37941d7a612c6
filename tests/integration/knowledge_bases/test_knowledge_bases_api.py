"""POST/GET /knowledge-bases and PUT /me through the real handlers, on moto and the MemOS emulator."""

from __future__ import annotations

from http import HTTPStatus

import pytest

from memmy_kb import composition
from tests.support.events import claims_for
from tests.support.iam import record_aws_calls


def create(service, name="产品资料", user="alice", **kwargs):
    return service.call("POST", "/knowledge-bases", user, body={"name": name}, **kwargs)


def linked_memos_kbs(service) -> list[dict]:
    return [kb for kb in service.memos.state()["knowledge_bases"] if kb["linked"]]


def test_create_returns_the_kb_and_maps_it_to_one_memos_kb(service):
    reply = create(service, "  产品资料  ")
    assert reply.status == HTTPStatus.CREATED
    kb = reply.body
    assert (kb["name"], kb["role"], kb["recall"]) == ("产品资料", "owner", True)
    assert kb["owner"]["user_id"] == "alice"
    assert kb["id"].startswith("kb_")
    assert [m["name"] for m in linked_memos_kbs(service)] == [f"memmy:{kb['id']}"]


def test_the_memos_id_never_leaves_the_service(service):
    kb = create(service).body
    memos_id = linked_memos_kbs(service)[0]["id"]
    for reply in (
        service.call("GET", "/knowledge-bases", "alice"),
        service.call("GET", f"/knowledge-bases/{kb['id']}", "alice"),
    ):
        assert memos_id not in str(reply.body)


def test_list_and_get_show_only_the_callers_kbs(service):
    mine = create(service, "alice's", "alice").body
    theirs = create(service, "bob's", "bob").body
    listed = service.call("GET", "/knowledge-bases", "alice")
    assert listed.status == HTTPStatus.OK
    assert [kb["id"] for kb in listed.body["items"]] == [mine["id"]]
    assert service.call("GET", f"/knowledge-bases/{mine['id']}", "alice").body == mine
    stranger = service.call("GET", f"/knowledge-bases/{theirs['id']}", "alice")
    missing = service.call("GET", "/knowledge-bases/kb_doesnotexist", "alice")
    assert stranger.status == missing.status == HTTPStatus.NOT_FOUND
    assert (
        stranger.body
        == missing.body
        == {"error": {"code": "kb_not_found", "message": "Knowledge base not found."}}
    )


def test_new_user_has_an_empty_list(service):
    assert service.call("GET", "/knowledge-bases", "carol").body == {"items": []}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "   "},
        {"name": "x" * 101},
        {"name": "bad\x00name"},
        {"name": "rtl\u202ename"},
        {"name": 5},
        "not json",
    ],
)
def test_invalid_names_get_422_in_the_error_shape_and_store_nothing(service, body):
    reply = service.call("POST", "/knowledge-bases", "alice", body=body)
    assert reply.status == HTTPStatus.UNPROCESSABLE_ENTITY
    assert reply.body["error"]["code"] == "validation_error"
    assert reply.body["error"]["message"]
    assert service.call("GET", "/knowledge-bases", "alice").body == {"items": []}
    assert service.memos.calls("/create/knowledgebase") == 0


def test_a_name_of_100_characters_is_accepted(service):
    assert create(service, "名" * 100).status == HTTPStatus.CREATED


def test_no_verified_user_is_401(service):
    reply = service.call("POST", "/knowledge-bases", None, body={"name": "x"})
    assert reply.status == HTTPStatus.UNAUTHORIZED
    assert reply.body["error"]["code"] == "unauthorized"


@pytest.mark.parametrize(
    ("fault", "code"),
    [
        ({"code": 50004}, "memos_unavailable"),
        ({"http_status": 502}, "memos_unavailable"),
        ({"code": 40304}, "memos_quota_exhausted"),
    ],
)
def test_memos_failure_is_503_and_stores_nothing(service, fault, code):
    service.memos.add_fault("/create/knowledgebase", **fault)
    reply = create(service)
    assert reply.status == HTTPStatus.SERVICE_UNAVAILABLE
    assert reply.body["error"]["code"] == code
    assert service.call("GET", "/knowledge-bases", "alice").body == {"items": []}


def test_a_failed_write_deletes_the_memos_kb_again(service, monkeypatch):
    # Given a KB store whose write of META and the owner grant fails, handed to the route by override
    store = service.stores.kbs

    def fail(*args, **kwargs):
        raise RuntimeError("DynamoDB is down")

    monkeypatch.setattr(store, "put_kb_with_owner_grant", fail)
    service.override(composition.get_kb_store, lambda: store)
    reply = create(service)
    assert reply.status == HTTPStatus.INTERNAL_SERVER_ERROR
    assert reply.body["error"]["code"] == "internal_error"
    assert service.memos.state()["knowledge_bases"] == []


def test_idempotency_key_returns_the_first_result(service):
    first = create(service, headers={"Idempotency-Key": "req-1"})
    again = create(service, headers={"Idempotency-Key": "req-1"})
    assert first.status == again.status == HTTPStatus.CREATED
    assert again.body == first.body
    assert service.memos.calls("/create/knowledgebase") == 1
    assert len(service.call("GET", "/knowledge-bases", "alice").body["items"]) == 1


def test_idempotency_key_is_scoped_to_the_caller_and_the_body(service):
    alice = create(service, user="alice", headers={"Idempotency-Key": "same"})
    bob = create(service, user="bob", headers={"Idempotency-Key": "same"})
    assert alice.body["id"] != bob.body["id"]
    reused = create(service, "another name", user="alice", headers={"Idempotency-Key": "same"})
    assert reused.status == HTTPStatus.UNPROCESSABLE_ENTITY
    assert reused.body["error"]["code"] == "idempotency_key_reused"
    bad = create(service, headers={"Idempotency-Key": "x" * 200})
    assert bad.body["error"]["code"] == "invalid_idempotency_key"


def test_a_failed_create_can_be_retried_with_the_same_key(service):
    service.memos.add_fault("/create/knowledgebase", code=50004, times=1)
    assert create(service, headers={"Idempotency-Key": "k"}).status == HTTPStatus.SERVICE_UNAVAILABLE
    assert create(service, headers={"Idempotency-Key": "k"}).status == HTTPStatus.CREATED


def dynamodb_calls(action) -> list[tuple[str, list[str]]]:
    """Each DynamoDB call ``action`` made: the operation, and for a transaction its items as
    ``<action> <PK prefix>`` (``Put INTENT``, ``ConditionCheck LIMIT``...)."""
    with record_aws_calls() as calls:
        action()
    made = []
    for service, operation, params in calls:
        if service != "dynamodb":
            continue
        items = [
            f"{kind} {(body.get('Item') or body.get('Key'))['PK']['S'].split('#')[0]}"
            for item in params.get("TransactItems", [])
            for kind, body in item.items()
        ]
        made.append((operation, items))
    return made


def test_creating_a_kb_costs_four_dynamodb_calls_with_or_without_an_idempotency_key(service):
    # Round trips counted, not timed (docs/architecture.md, "Create"): a change that adds one fails here.
    named = claims_for("alice", name="Alice")  # login tokens carry a name: no profile read
    assert create(service, "warm", claims=named).status == HTTPStatus.CREATED  # the MemOS key cached
    memos_creates = service.memos.calls("/create/knowledgebase")
    before = ["Put INTENT", "ConditionCheck LIMIT"]  # the intent; fewer than MAX_KBS_PER_USER owned
    # The MemOS backends' counters read, one claimed (docs/memos.md, "Backends")
    placement = [("BatchGetItem", []), ("UpdateItem", [])]
    after = ["Put KB", "Put USER", "Delete INTENT", "Update LIMIT"]  # META, owner grant, count

    assert dynamodb_calls(lambda: create(service, "一", claims=named)) == [
        ("TransactWriteItems", before),
        *placement,
        ("TransactWriteItems", after),
    ]
    keyed = {"Idempotency-Key": "budget-1"}
    assert dynamodb_calls(lambda: create(service, "二", claims=named, headers=keyed)) == [
        ("TransactWriteItems", [*before[:1], "Put IDEMPOTENCY", *before[1:]]),  # the key claimed
        *placement,
        ("TransactWriteItems", [*after, "Update IDEMPOTENCY"]),  # and its answer stored
    ]
    # A repeat is answered from the key's record: one refused transaction, no MemOS call
    assert dynamodb_calls(lambda: create(service, "二", claims=named, headers=keyed)) == [
        ("TransactWriteItems", [*before[:1], "Put IDEMPOTENCY", *before[1:]]),
    ]
    assert service.memos.calls("/create/knowledgebase") == memos_creates + 2  # one per KB made


def test_a_token_without_a_name_costs_one_profile_read_for_the_owners_name(service):
    put_me = service.call("PUT", "/me", claims=claims_for("alice", name="Alice Wang"))
    assert put_me.status == HTTPStatus.OK
    assert create(service, "warm").status == HTTPStatus.CREATED

    calls = dynamodb_calls(lambda: create(service, "一"))

    assert [operation for operation, _ in calls] == [
        "TransactWriteItems",
        "BatchGetItem",
        "UpdateItem",
        "GetItem",
        "TransactWriteItems",
    ]


# -- PUT /me -------------------------------------------------------------------------------------


def put_me(service, user, **claims):
    return service.call("PUT", "/me", claims=claims_for(user, **claims))


def test_put_me_records_verified_claims_in_normal_form(service):
    reply = put_me(service, "alice", name="Alice Wang", email="Alice@Example.COM", phone="138 0013 8000")
    assert reply.status == HTTPStatus.OK
    assert reply.body == {
        "user_id": "alice",
        "display_name": "Alice Wang",
        "email": "alice@example.com",
        "phone": "+8613800138000",
        "recall_new_shares": True,
    }
    repo = service.stores
    assert repo.profiles.get_lookup_claimants("phone", "+8613800138000") == {"alice"}
    assert repo.profiles.get_lookup_claimants("email", "alice@example.com") == {"alice"}


def test_unverified_claims_are_ignored(service):
    claims = claims_for("alice", name="Alice")
    claims.update(email="a@example.com", email_verified="false", phone_number="+8613800138000")
    reply = service.call("PUT", "/me", claims=claims)
    assert reply.body == {
        "user_id": "alice",
        "display_name": "Alice",
        "email": None,
        "phone": None,
        "recall_new_shares": True,
    }


def test_a_changed_phone_moves_the_lookup(service):
    put_me(service, "alice", name="Alice", phone="+8613800138000")
    put_me(service, "alice", name="Alice", phone="+8613900139000")
    repo = service.stores
    assert repo.profiles.get_lookup_claimants("phone", "+8613800138000") == set()
    assert repo.profiles.get_lookup_claimants("phone", "+8613900139000") == {"alice"}


def test_a_phone_verified_by_another_account_is_claimed_by_both(service):
    put_me(service, "alice", name="Alice", phone="+8613800138000", iat=1_800_000_000)
    reply = put_me(service, "bob", name="Bob", phone="13800138000", iat=1_800_000_100)
    assert reply.body["phone"] == "+8613800138000"
    repo = service.stores
    assert repo.profiles.get_lookup_claimants("phone", "+8613800138000") == {"alice", "bob"}
    assert repo.profiles.get_profile("alice").phone == "+8613800138000"


def test_owner_name_comes_from_the_profile(service):
    put_me(service, "alice", name="Alice Wang")
    kb = create(service).body
    assert kb["owner"] == {"user_id": "alice", "display_name": "Alice Wang", "contact": None}
    put_me(service, "alice", name="Alice W.")
    assert (
        service.call("GET", f"/knowledge-bases/{kb['id']}", "alice").body["owner"]["display_name"]
        == "Alice W."
    )


def test_an_identifier_is_contested_whichever_token_is_older_until_one_account_drops_it(service):
    put_me(service, "alice", name="Alice", email="shared@example.com", iat=1_800_000_000)
    put_me(service, "bob", name="Bob", email="shared@example.com", iat=1_800_000_100)  # verified later
    again = put_me(service, "alice", name="Alice", email="shared@example.com", iat=1_800_000_000)
    repo = service.stores
    assert again.body["email"] == "shared@example.com"
    assert repo.profiles.get_lookup_claimants("email", "shared@example.com") == {"alice", "bob"}
    # bob's next login no longer verifies it: alice holds it alone again.
    put_me(service, "bob", name="Bob", iat=1_800_000_200)
    assert repo.profiles.get_lookup_claimants("email", "shared@example.com") == {"alice"}
    assert repo.profiles.get_profile("bob").email is None


def test_put_me_repairs_a_missing_lookup(service):
    put_me(service, "alice", name="Alice", phone="+8613800138000")
    repo = service.stores
    repo.table.client.delete_item(
        TableName=repo.table.name, Key={"PK": {"S": "PHONE#+8613800138000"}, "SK": {"S": "LOOKUP"}}
    )
    put_me(service, "alice", name="Alice", phone="+8613800138000")
    assert repo.profiles.get_lookup_claimants("phone", "+8613800138000") == {"alice"}


def test_a_new_account_verifying_both_identifiers_of_an_older_one_contests_both(service):
    # Given an old account verified with an email and a phone
    put_me(service, "alice-old", name="Alice", email="alice@example.com", phone="13800138000", iat=1_800_000_000)
    # When a newer account verifies both
    reply = put_me(service, "alice-new", name="Alice", email="alice@example.com", phone="13800138000", iat=1_800_000_100)
    # Then it registers with both, the old profile keeps both, and both identifiers are contested
    assert reply.status == HTTPStatus.OK, reply.body
    assert (reply.body["email"], reply.body["phone"]) == ("alice@example.com", "+8613800138000")
    old = service.stores.profiles.get_profile("alice-old")
    assert (old.email, old.phone) == ("alice@example.com", "+8613800138000")
    assert service.stores.profiles.get_lookup_claimants("phone", "+8613800138000") == {"alice-old", "alice-new"}
