"""The access tokens' signer on KMS (memmy_kb.adapters.kms_signer, on moto's KMS): a token it signs
verifies with PyJWT against its JWKS, and passes the ``mcp`` function's own check (``verify_token``
through a ``JwksCache`` on that JWKS); its ``kid`` is the key's RFC 7638 thumbprint."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import boto3
import jwt
import pytest
from joserfc.jwk import RSAKey
from moto import mock_aws

from memmy_kb.adapters.kms_signer import KmsTokenSigner
from memmy_kb.api.mcp_endpoint.bearer import JwksCache, verify_token
from memmy_kb.domain.remote_mcp.tokens import TokenRefused, TokenRules, mcp_access_claims

ISSUER = "https://api.example"
RESOURCE = "https://api.example/mcp"
NOW = 1_800_000_000


@pytest.fixture
def kms(aws_env: None) -> Iterator[Any]:
    with mock_aws():
        yield boto3.client("kms", region_name="us-east-1")


@pytest.fixture
def signer(kms: Any) -> KmsTokenSigner:
    key = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY")["KeyMetadata"]["KeyId"]
    return KmsTokenSigner(key, kms)


def claims(**over: Any) -> dict[str, Any]:
    made = mcp_access_claims("alice", issuer=ISSUER, resource=RESOURCE, client_id="mcp-1", auth_time=NOW - 5,
                             now=NOW, client_name="Agent")  # fmt: skip
    return made | over


def test_a_signed_token_verifies_against_the_jwks_with_pyjwt(signer: KmsTokenSigner) -> None:
    signed = claims()
    token = signer.sign(signed)
    (jwk,) = signer.jwks()["keys"]

    header = jwt.get_unverified_header(token)
    decoded = jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=["RS256"], audience=RESOURCE,
                         options={"verify_exp": False, "verify_iat": False})  # fmt: skip

    assert header == {"alg": "RS256", "typ": "at+jwt", "kid": jwk["kid"]}
    assert decoded == signed
    assert (jwk["kty"], jwk["use"], jwk["alg"]) == ("RSA", "sig", "RS256")


def test_the_kid_is_the_keys_rfc7638_thumbprint(signer: KmsTokenSigner) -> None:
    (jwk,) = signer.jwks()["keys"]

    assert jwk["kid"] == RSAKey.import_key({"kty": "RSA", "n": jwk["n"], "e": jwk["e"]}).thumbprint()


def test_the_mcp_endpoint_accepts_its_tokens_and_refuses_a_forged_one(signer: KmsTokenSigner) -> None:
    keys = JwksCache("kms", fetch=lambda _: signer.jwks())
    rules = TokenRules(issuer=ISSUER, audience=RESOURCE, scope="kb.search")

    caller = verify_token(signer.sign(claims()), keys, rules, NOW)

    assert (caller.user_id, caller.client_id, caller.client_name, caller.auth_time) == (
        "alice", "mcp-1", "Agent", NOW - 5)  # fmt: skip
    head, _body, signature = signer.sign(claims()).split(".")
    forged = base64.urlsafe_b64encode(json.dumps(claims(sub="mallory")).encode()).rstrip(b"=").decode()
    with pytest.raises(TokenRefused):
        verify_token(f"{head}.{forged}.{signature}", keys, rules, NOW)


def test_the_public_key_is_read_from_kms_once(signer: KmsTokenSigner, kms: Any) -> None:
    calls: list[str] = []
    real = kms.get_public_key
    kms.get_public_key = lambda **kw: calls.append(kw["KeyId"]) or real(**kw)

    signer.sign(claims())
    signer.sign(claims())
    signer.jwks()

    assert len(calls) == 1


def test_claims_too_long_for_one_kms_signature_are_refused(signer: KmsTokenSigner) -> None:
    with pytest.raises(ValueError, match="4096 bytes"):
        signer.sign(claims(client_name="x" * 4000))
