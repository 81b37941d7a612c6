"""Local login tokens: issued like a login provider's, refused for every reason the JWT authorizer has."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import stat
import time
from pathlib import Path

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from memmy_local import tokens
from memmy_local.tokens import TokenError, issue_token, load_signing_key, verify_token
from tests.support.clock import FakeClock

ISSUER = tokens.DEFAULT_ISSUER
AUDIENCE = tokens.DEFAULT_AUDIENCE


@pytest.fixture
def key_path(tmp_path: Path) -> Path:
    return tmp_path / "home" / tokens.KEY_FILE_NAME


def _verify(token: str, key_path: Path, **overrides: str) -> dict:
    options = {"issuer": ISSUER, "audience": AUDIENCE} | overrides
    return verify_token(token, key=load_signing_key(key_path), **options)


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def test_issued_token_carries_verified_profile_claims(key_path: Path) -> None:
    token = issue_token(
        "alice", name="Alice", email="Alice@Example.com", phone="+8613800000000", key_path=key_path
    )

    claims = _verify(token, key_path)

    assert claims["sub"] == "alice"
    assert claims["iss"] == ISSUER
    assert claims["aud"] == AUDIENCE
    assert claims["name"] == "Alice"
    assert claims["email"] == "Alice@Example.com"
    assert claims["email_verified"] is True
    assert claims["phone_number"] == "+8613800000000"
    assert claims["phone_number_verified"] is True
    assert claims["exp"] - claims["iat"] == tokens.DEFAULT_TTL_SECONDS


def test_token_without_profile_has_only_registered_claims(key_path: Path) -> None:
    claims = _verify(issue_token("bob", key_path=key_path, ttl_seconds=60), key_path)

    assert set(claims) == {"sub", "iss", "aud", "iat", "exp"}
    assert claims["exp"] - claims["iat"] == 60


def test_header_names_the_key_by_thumbprint(key_path: Path) -> None:
    token = issue_token("alice", key_path=key_path)

    header = jwt.get_unverified_header(token)

    assert header["alg"] == "RS256"
    assert header["kid"] == tokens.key_id(load_signing_key(key_path))


def test_key_is_generated_once_with_owner_only_permissions(key_path: Path) -> None:
    first = issue_token("alice", key_path=key_path)
    mode = stat.S_IMODE(key_path.stat().st_mode)
    second_key = load_signing_key(key_path)

    assert mode == 0o600
    assert stat.S_IMODE(key_path.parent.stat().st_mode) == 0o700
    assert _verify(first, key_path)["sub"] == "alice"
    assert tokens.key_id(second_key) == jwt.get_unverified_header(first)["kid"]
    assert not [p for p in key_path.parent.iterdir() if p.name != key_path.name]


def test_home_prefers_data_dir_then_env_then_user_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tokens.HOME_ENV, str(tmp_path / "env-home"))

    assert tokens.signing_key_path(tmp_path / "data") == tmp_path / "data" / tokens.KEY_FILE_NAME
    assert tokens.signing_key_path() == tmp_path / "env-home" / tokens.KEY_FILE_NAME
    monkeypatch.delenv(tokens.HOME_ENV)
    assert tokens.signing_key_path() == Path.home() / ".memmy-kb" / tokens.KEY_FILE_NAME


def test_missing_token_is_refused(key_path: Path) -> None:
    with pytest.raises(TokenError, match="no token"):
        _verify("", key_path)


def test_garbage_is_refused(key_path: Path) -> None:
    with pytest.raises(TokenError):
        _verify("not-a-jwt", key_path)


def test_token_signed_with_another_key_is_refused(tmp_path: Path, key_path: Path) -> None:
    # Signed with another key but naming ours: the kid finds our key, whose signature check fails.
    other = load_signing_key(tmp_path / "other" / tokens.KEY_FILE_NAME)
    now = int(time.time())
    claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    token = jwt.encode(claims, other, algorithm="RS256", headers={"kid": tokens.key_id(load_signing_key(key_path))})

    with pytest.raises(TokenError, match="InvalidSignatureError"):
        _verify(token, key_path)


def test_tampered_claims_are_refused(key_path: Path) -> None:
    header, _, signature = issue_token("alice", key_path=key_path).split(".")
    forged = _b64({"sub": "mallory", "iss": ISSUER, "aud": AUDIENCE, "iat": 0, "exp": 2**33})

    with pytest.raises(TokenError):
        _verify(f"{header}.{forged}.{signature}", key_path)


def test_expired_token_is_refused(key_path: Path) -> None:
    token = issue_token("alice", key_path=key_path, ttl_seconds=-1)

    with pytest.raises(TokenError, match="expired"):
        _verify(token, key_path)


def test_a_token_is_accepted_until_its_exp_and_refused_from_then_on(key_path: Path) -> None:
    clock = FakeClock()
    token = issue_token("alice", key_path=key_path, ttl_seconds=60, clock=clock.now)
    key = load_signing_key(key_path)

    def verify() -> dict:
        return verify_token(token, key=key, issuer=ISSUER, audience=AUDIENCE, clock=clock.now)

    assert verify()["iat"] == clock.now()
    clock.advance(59.9)
    assert verify()["sub"] == "alice"
    clock.advance(0.1)
    with pytest.raises(TokenError, match="expired"):
        verify()


@pytest.mark.parametrize("claim", ["iat", "nbf"])
def test_a_token_valid_only_later_is_refused_until_then(key_path: Path, claim: str) -> None:
    clock = FakeClock()
    later = int(clock.now()) + 10
    token = issue_token("alice", key_path=key_path, clock=clock.now, extra_claims={claim: later})
    key = load_signing_key(key_path)

    def verify() -> dict:
        return verify_token(token, key=key, issuer=ISSUER, audience=AUDIENCE, clock=clock.now)

    clock.advance(9)
    with pytest.raises(TokenError, match="ImmatureSignatureError"):
        verify()
    clock.advance(1)
    assert verify()[claim] == later


@pytest.mark.parametrize("claim", ["iat", "nbf", "exp"])
def test_a_time_that_is_not_a_number_is_refused(key_path: Path, claim: str) -> None:
    token = issue_token("alice", key_path=key_path, extra_claims={claim: "soon"})

    with pytest.raises(TokenError, match="invalid token"):
        _verify(token, key_path)


def test_an_expired_token_of_another_issuer_is_refused_as_expired(key_path: Path) -> None:
    # The time checks come before the issuer's, as in PyJWT: the first failed check names the reason.
    token = issue_token("alice", key_path=key_path, ttl_seconds=-1, issuer="https://evil.example")

    with pytest.raises(TokenError, match="expired"):
        _verify(token, key_path)


def test_wrong_audience_is_refused(key_path: Path) -> None:
    token = issue_token("alice", key_path=key_path, audience="someone-else")

    with pytest.raises(TokenError, match="audience"):
        _verify(token, key_path)


def test_wrong_issuer_is_refused(key_path: Path) -> None:
    token = issue_token("alice", key_path=key_path, issuer="https://evil.example")

    with pytest.raises(TokenError, match="issuer"):
        _verify(token, key_path)


def test_token_from_the_future_is_refused(key_path: Path) -> None:
    token = issue_token("alice", key_path=key_path, extra_claims={"iat": int(time.time()) + 3600})

    with pytest.raises(TokenError):
        _verify(token, key_path)


def test_token_without_sub_is_refused(key_path: Path) -> None:
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    key = load_signing_key(key_path)
    token = jwt.encode(claims, key, algorithm="RS256", headers={"kid": tokens.key_id(key)})

    with pytest.raises(TokenError):
        _verify(token, key_path)


def test_alg_none_is_refused(key_path: Path) -> None:
    now = int(time.time())
    claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    kid = tokens.key_id(load_signing_key(key_path))
    unsigned = f"{_b64({'alg': 'none', 'typ': 'JWT', 'kid': kid})}.{_b64(claims)}."

    with pytest.raises(TokenError):
        _verify(unsigned, key_path)


def test_hs256_signed_with_the_public_key_is_refused(key_path: Path) -> None:
    now = int(time.time())
    claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    header = _b64({"alg": "HS256", "typ": "JWT", "kid": tokens.key_id(load_signing_key(key_path))})
    payload = _b64(claims)
    # The classic key-confusion forgery: HMAC keyed with the verifier's public key.
    public_pem = (
        load_signing_key(key_path)
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    mac = hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(mac).rstrip(b"=").decode()

    with pytest.raises(TokenError):
        _verify(f"{header}.{payload}.{signature}", key_path)


def test_empty_sub_cannot_be_issued(key_path: Path) -> None:
    with pytest.raises(ValueError, match="sub"):
        issue_token("", key_path=key_path)


@pytest.mark.parametrize("headers", [None, {"kid": "another-key"}], ids=["no-kid", "other-kid"])
def test_a_token_whose_kid_names_no_key_is_refused_even_with_a_good_signature(key_path: Path, headers) -> None:
    now = int(time.time())
    claims = {"sub": "alice", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 60}
    token = jwt.encode(claims, load_signing_key(key_path), algorithm="RS256", headers=headers)

    with pytest.raises(TokenError, match="kid"):
        _verify(token, key_path)
