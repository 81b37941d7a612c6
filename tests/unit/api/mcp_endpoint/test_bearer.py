"""The bearer token's signature (``memmy_kb.api.mcp_endpoint.bearer``): RS256 only, the key by ``kid`` from a
JWKS fetched once per container and again for an unknown ``kid`` (at most every 30 s), and a JWKS that
cannot be fetched is ``KeysUnavailable`` (503), never a refusal of the token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from memmy_kb.api.mcp_endpoint.bearer import JwksCache, KeysUnavailable, fetch_jwks, verify_token
from memmy_kb.domain.remote_mcp.tokens import TokenRefused, TokenRules
from tests.support.mcp_tokens import ISSUER, RESOURCE, JwksServer, jwks_of, mcp_claims, mcp_token, signing_key

RULES = TokenRules(issuer=ISSUER, audience=RESOURCE, scope="kb.search")


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return signing_key(tmp_path_factory.mktemp("key"))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def cache_of(document: dict[str, Any], clock: Clock | None = None) -> JwksCache:
    return JwksCache("jwks", lambda url: document, clock or Clock())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hmac_token(claims: dict[str, Any], secret: bytes) -> str:
    signed = f"{_b64(json.dumps({'alg': 'HS256', 'typ': 'JWT'}).encode())}.{_b64(json.dumps(claims).encode())}"
    return f"{signed}.{_b64(hmac.new(secret, signed.encode(), hashlib.sha256).digest())}"


def verify(token: str, keys: JwksCache) -> Any:
    return verify_token(token, keys, RULES, int(time.time()))


def test_a_token_signed_by_a_key_of_the_jwks_names_its_caller(key: Any) -> None:
    keys = cache_of(jwks_of(key))

    assert verify(mcp_token(key, "bob"), keys).user_id == "bob"
    assert verify(mcp_token(key, "carol"), keys).user_id == "carol"
    assert keys.fetches == 1, "the JWKS is fetched once per container"


def test_a_token_signed_by_another_key_with_the_same_kid_is_refused(key: Any) -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    from memmy_local.tokens import key_id

    forged = mcp_token(other, kid=key_id(key))

    with pytest.raises(TokenRefused, match="signature"):
        verify(forged, cache_of(jwks_of(key)))


@pytest.mark.parametrize("algorithm", ["HS256", "none"])
def test_alg_none_and_hmac_tokens_are_refused_before_any_key(key: Any, algorithm: str) -> None:
    # HS256 keyed with the public key's PEM: the classic confusion attack (PyJWT will not sign it).
    secret = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    token = hmac_token(mcp_claims(), secret) if algorithm == "HS256" else jwt.encode(mcp_claims(), None, algorithm="none")
    keys = cache_of(jwks_of(key))

    with pytest.raises(TokenRefused, match="RS256"):
        verify(token, keys)
    assert keys.fetches == 0


def test_garbage_is_a_malformed_token(key: Any) -> None:
    with pytest.raises(TokenRefused, match="malformed"):
        verify("not.a.jwt", cache_of(jwks_of(key)))


def test_an_unknown_kid_fetches_the_jwks_again_once_and_finds_a_rotated_key(key: Any) -> None:
    rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    document = jwks_of(key)
    clock = Clock()
    keys = cache_of(document, clock)
    assert verify(mcp_token(key), keys).user_id == "alice"
    clock.now += 31

    document["keys"] = jwks_of(key, rotated)["keys"]  # the server rotated its keys
    assert verify(mcp_token(rotated), keys).user_id == "alice"
    assert keys.fetches == 2


def test_made_up_kids_cannot_make_every_call_a_fetch(key: Any) -> None:
    clock = Clock()
    keys = cache_of(jwks_of(key), clock)
    verify(mcp_token(key), keys)
    clock.now += 31

    for n in range(5):
        with pytest.raises(TokenRefused, match="unknown key"):
            verify(mcp_token(key, kid=f"made-up-{n}"), keys)

    assert keys.fetches == 2, "one fetch again for the first unknown kid, none for the next ones within 30 s"


def test_a_jwks_that_cannot_be_fetched_is_keys_unavailable_not_a_refusal(key: Any) -> None:
    server = JwksServer(jwks_of(key))
    server.failing = True
    with server.serving():
        keys = JwksCache(server.url)
        with pytest.raises(KeysUnavailable):
            verify(mcp_token(key), keys)

        server.failing = False
        assert verify(mcp_token(key), keys).user_id == "alice"
        assert server.fetches == 2


def test_fetching_a_jwks_that_is_not_a_key_set_fails(tmp_path: Path) -> None:
    server = JwksServer({"not": "keys"})
    with server.serving(), pytest.raises(KeysUnavailable, match="not a key set"):
        fetch_jwks(server.url)
    with pytest.raises(KeysUnavailable):
        fetch_jwks("http://127.0.0.1:9/jwks.json")  # nothing listens on the discard port
