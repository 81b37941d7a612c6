"""A token command for ``make e2e-stage`` against a stack whose login is its own Cognito user pool (the
template's default): ``MEMMY_KB_E2E_TOKEN_COMMAND="python -m tests.support.cognito_tokens --user-pool-id
POOL --client-id E2E_CLIENT"`` (README, "Deploying").

Run as ``... USER_NAME [--name N] [--email E] [--phone P]`` it prints the ID token of that person,
signed in with ``AdminInitiateAuth`` (``ADMIN_USER_PASSWORD_AUTH``) on the e2e app client the stack
creates with ``E2eLoginClient=true``; the desktop's client allows only the hosted sign-in. A person seen
for the first time is created (``<USER_NAME>@<email domain>`` unless ``--email`` is given; no message
sent), with the claims given marked verified as the local stack's tokens assert them, and put in the
group ``memmy-e2e``; every call sets a new random password, so none is stored anywhere.
``--delete-users`` deletes everyone in that group. It needs AWS credentials allowed
``cognito-idp:AdminGetUser``, ``AdminCreateUser``, ``AdminSetUserPassword``, ``AdminInitiateAuth``,
``CreateGroup``, ``AdminAddUserToGroup``, ``ListUsersInGroup`` and ``AdminDeleteUser`` on the pool.
"""

from __future__ import annotations

import argparse
import contextlib
import secrets
import sys
from collections.abc import Sequence
from typing import Any

import boto3

from memmy_kb.domain.directory import normalise_phone

GROUP = "memmy-e2e"
EMAIL_DOMAIN = "example.com"


def client_for(pool_id: str) -> Any:
    """The Cognito client of the pool's region (a pool id starts with its region: ``eu-west-1_AbC``)."""
    return boto3.client("cognito-idp", region_name=pool_id.split("_", 1)[0])


def attributes(email: str, *, name: str | None, email_given: bool, phone: str | None) -> list[dict[str, str]]:
    """A new person's attributes: the email (verified only when the test gave it), the name, the phone
    in E.164 (a national number read as mainland China's, as the service reads it), verified."""
    given = [("email", email), ("email_verified", "true" if email_given else "false")]
    if name is not None:
        given.append(("name", name))
    if phone is not None:
        e164 = normalise_phone(phone)
        if e164 is None:
            raise SystemExit(f"cognito_tokens: {phone!r} is not a phone number")
        given += [("phone_number", e164), ("phone_number_verified", "true")]
    return [{"Name": key, "Value": value} for key, value in given]


def ensure_user(cognito: Any, pool_id: str, email: str, user_attributes: list[dict[str, str]]) -> None:
    """Create the person (with no invitation) and put them in ``GROUP``, unless they exist."""
    try:
        cognito.admin_get_user(UserPoolId=pool_id, Username=email)
        return
    except cognito.exceptions.UserNotFoundException:
        pass
    cognito.admin_create_user(
        UserPoolId=pool_id, Username=email, UserAttributes=user_attributes, MessageAction="SUPPRESS"
    )
    with contextlib.suppress(cognito.exceptions.GroupExistsException):
        cognito.create_group(UserPoolId=pool_id, GroupName=GROUP, Description="people of make e2e-stage runs")
    cognito.admin_add_user_to_group(UserPoolId=pool_id, Username=email, GroupName=GROUP)


def sign_in(cognito: Any, pool_id: str, client_id: str, email: str) -> str:
    """A new random password, then ``ADMIN_USER_PASSWORD_AUTH``; the ID token (what the API takes)."""
    # Letters of both cases, digits and a symbol: any password policy Cognito allows is met.
    password = secrets.token_urlsafe(32) + "aA1!"
    cognito.admin_set_user_password(UserPoolId=pool_id, Username=email, Password=password, Permanent=True)
    answer = cognito.admin_initiate_auth(
        UserPoolId=pool_id,
        ClientId=client_id,
        AuthFlow="ADMIN_USER_PASSWORD_AUTH",
        AuthParameters={"USERNAME": email, "PASSWORD": password},
    )
    if "AuthenticationResult" not in answer:
        raise SystemExit(
            f"cognito_tokens: Cognito asked for {answer.get('ChallengeName')} instead of signing in"
        )
    return str(answer["AuthenticationResult"]["IdToken"])


def delete_users(cognito: Any, pool_id: str) -> int:
    """Delete everyone in ``GROUP``; how many."""
    deleted = 0
    pages = cognito.get_paginator("list_users_in_group").paginate(UserPoolId=pool_id, GroupName=GROUP)
    for page in pages:
        for user in page["Users"]:
            cognito.admin_delete_user(UserPoolId=pool_id, Username=user["Username"])
            deleted += 1
    return deleted


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="python -m tests.support.cognito_tokens", description=__doc__.split("\n\n")[0]
    )
    found.add_argument("--user-pool-id", required=True, help="the stack's UserPoolId output")
    found.add_argument("--client-id", help="the stack's E2eLoginClientId output (needed to sign in)")
    found.add_argument(
        "--email-domain", default=EMAIL_DOMAIN, help=f"of the made-up emails (default {EMAIL_DOMAIN})"
    )
    found.add_argument("--delete-users", action="store_true", help=f"delete everyone in the group {GROUP}")
    found.add_argument("user", nargs="?", metavar="USER_NAME", help="the person to sign in")
    found.add_argument("--name", help="display name")
    found.add_argument("--email", help="email, marked verified")
    found.add_argument("--phone", help="phone number, marked verified")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    cognito = client_for(args.user_pool_id)
    if args.delete_users:
        print(f"deleted {delete_users(cognito, args.user_pool_id)} users of the group {GROUP}")
        return 0
    if not args.user or not args.client_id:
        parser().error("USER_NAME and --client-id are needed to sign in")
    email = args.email or f"{args.user}@{args.email_domain}"
    given = attributes(email, name=args.name, email_given=args.email is not None, phone=args.phone)
    ensure_user(cognito, args.user_pool_id, email, given)
    print(sign_in(cognito, args.user_pool_id, args.client_id, email))
    return 0


if __name__ == "__main__":
    sys.exit(main())
