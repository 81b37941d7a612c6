"""The Cognito token command for ``make e2e-stage`` (tests/support/cognito_tokens.py) on moto's Cognito: a
person is made once with the claims asked for, verified, in the run's group, and signed in on the e2e
client each time; ``--delete-users`` removes the group's people and nobody else.

moto neither enforces an app client's auth flows nor puts the profile claims in its ID tokens: the flows
are checked on the template (tests/unit/template/test_login_template.py), the claims on the user's attributes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import jwt
import pytest
from moto import mock_aws

from tests.support import cognito_tokens

REGION = "eu-west-1"


@pytest.fixture
def pool() -> Iterator[tuple[Any, str, str]]:
    """A pool shaped as the template's (email as the username), and its e2e client."""
    with mock_aws():
        cognito = boto3.client("cognito-idp", region_name=REGION)
        pool_id = cognito.create_user_pool(
            PoolName="memmy-kb-users",
            UsernameAttributes=["email"],
            Schema=[{"Name": "email", "AttributeDataType": "String", "Required": True, "Mutable": True}],
        )["UserPool"]["Id"]
        client_id = cognito.create_user_pool_client(
            UserPoolId=pool_id, ClientName="memmy-e2e", ExplicitAuthFlows=["ALLOW_ADMIN_USER_PASSWORD_AUTH"]
        )["UserPoolClient"]["ClientId"]
        yield cognito, pool_id, client_id


def token_of(capsys: pytest.CaptureFixture[str], pool_id: str, client_id: str, *args: str) -> dict[str, Any]:
    assert cognito_tokens.main(["--user-pool-id", pool_id, "--client-id", client_id, *args]) == 0
    printed = capsys.readouterr().out.split()
    claims: dict[str, Any] = jwt.decode(printed[-1], options={"verify_signature": False})
    return claims


def attributes_of(cognito: Any, pool_id: str, username: str) -> dict[str, str]:
    user = cognito.admin_get_user(UserPoolId=pool_id, Username=username)
    return {a["Name"]: a["Value"] for a in user["UserAttributes"] if a["Name"] != "sub"}


def test_a_person_is_made_once_with_the_claims_asked_for_and_signed_in_each_time(pool, capsys) -> None:
    cognito, pool_id, client_id = pool
    name = "memmy-e2e-run1-sales-ab12"

    first = token_of(capsys, pool_id, client_id, name, "--name", "销售小王", "--phone", "13800138000")
    again = token_of(capsys, pool_id, client_id, name, "--name", "销售小王", "--phone", "13800138000")

    # An ID token for the e2e client, of the same person both times
    assert (first["token_use"], first["aud"]) == ("id", client_id)
    assert again["sub"] == first["sub"]
    # Made once: the made-up email unverified, the name, the phone in E.164 and verified
    (user,) = cognito.list_users(UserPoolId=pool_id)["Users"]
    assert attributes_of(cognito, pool_id, f"{name}@example.com") == {
        "email": f"{name}@example.com",
        "email_verified": "false",
        "name": "销售小王",
        "phone_number": "+8613800138000",
        "phone_number_verified": "true",
    }
    assert user["UserStatus"] == "CONFIRMED"  # a permanent password, never a forced change
    group = cognito.list_users_in_group(UserPoolId=pool_id, GroupName=cognito_tokens.GROUP)["Users"]
    assert [u["Username"] for u in group] == [user["Username"]]


def test_an_email_asked_for_is_the_persons_and_verified(pool, capsys) -> None:
    cognito, pool_id, client_id = pool
    claims = token_of(capsys, pool_id, client_id, "memmy-e2e-run1-pm-ab12", "--email", "pm-ab12@example.com")
    assert claims["email"] == "pm-ab12@example.com"
    assert attributes_of(cognito, pool_id, "pm-ab12@example.com") == {
        "email": "pm-ab12@example.com",
        "email_verified": "true",
    }


def test_delete_users_removes_the_runs_people_and_nobody_else(pool, capsys) -> None:
    cognito, pool_id, client_id = pool
    cognito.admin_create_user(UserPoolId=pool_id, Username="alice@corp.example", MessageAction="SUPPRESS")
    for person in ("memmy-e2e-run1-a", "memmy-e2e-run2-b"):
        token_of(capsys, pool_id, client_id, person)

    assert cognito_tokens.main(["--user-pool-id", pool_id, "--delete-users"]) == 0

    assert "deleted 2 users" in capsys.readouterr().out
    (left,) = cognito.list_users(UserPoolId=pool_id)["Users"]
    assert {a["Name"]: a["Value"] for a in left["Attributes"]}["email"] == "alice@corp.example"


def test_a_phone_that_is_no_number_is_refused_before_anyone_is_made(pool) -> None:
    cognito, pool_id, client_id = pool
    with pytest.raises(SystemExit, match="is not a phone number"):
        cognito_tokens.main(
            ["--user-pool-id", pool_id, "--client-id", client_id, "p-1", "--phone", "1-800-FLOWERS"]
        )
    assert cognito.list_users(UserPoolId=pool_id)["Users"] == []
