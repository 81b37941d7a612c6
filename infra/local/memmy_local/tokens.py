"""Local login tokens: what Memmy's login provider issues in production, minted on this machine.

Tokens are RS256 JWTs signed with a key pair generated on first use and kept (mode 0600) at
``<home>/dev-signing-key.pem``. ``home`` is the stack's ``--data-dir`` when given, else ``$MEMMY_KB_HOME``,
else ``~/.memmy-kb``, so ``memmy-local token`` in another terminal signs with the key the running stack
checks. ``verify_token`` applies the checks of API Gateway's JWT authorizer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.types import Options

# The dev identity provider's root URL at its default port (memmy_local.identity.provider); `memmy-local token`
# uses the running stack's issuer when one is recorded in the dev home.
DEFAULT_ISSUER = "http://127.0.0.1:8070"
DEFAULT_AUDIENCE = "memmy-kb"
DEFAULT_TTL_SECONDS = 12 * 3600
# MCP access tokens (docs/login.md, "MCP clients"): for the remote MCP endpoint, at most an hour. Their
# claims are the service's (memmy_kb.domain.remote_mcp.tokens, imported when one is signed: `memmy-local
# token` loads none of the core); these bounds check the command's options and equal the service's.
MCP_SCOPE = "kb.search"
MCP_TTL_SECONDS = 3600
CLI_MCP_CLIENT_ID = "memmy-local-cli"
MAX_CLIENT_NAME = 100  # characters of an MCP token's client_name
# The local stack's MCP endpoint at the API's default port (memmy_local.stack_config): `memmy-local token
# --mcp` uses the running stack's when one is recorded in the dev home.
DEFAULT_MCP_RESOURCE = "http://127.0.0.1:8080/mcp"
KEY_FILE_NAME = "dev-signing-key.pem"
HOME_ENV = "MEMMY_KB_HOME"
ALGORITHM = "RS256"

SigningKey = rsa.RSAPrivateKey
VerifyingKey = rsa.RSAPublicKey | rsa.RSAPrivateKey
Clock = Callable[[], float]
REQUIRED_CLAIMS = ["exp", "iat", "iss", "aud", "sub"]
# PyJWT reads the time itself; its time checks are off and ``_check_times`` makes them against our clock.
_UNTIMED: Options = {"verify_exp": False, "verify_iat": False, "verify_nbf": False}


class TokenError(Exception):
    """A token the JWT authorizer would refuse; the message says why (never the token itself)."""


def dev_home(data_dir: Path | None = None) -> Path:
    """The directory holding local secrets: ``data_dir``, else ``$MEMMY_KB_HOME``, else ``~/.memmy-kb``."""
    if data_dir is not None:
        return Path(data_dir)
    env_home = os.environ.get(HOME_ENV)
    return Path(env_home) if env_home else Path.home() / ".memmy-kb"


def signing_key_path(data_dir: Path | None = None) -> Path:
    """Where the dev signing key lives for this ``data_dir`` (see ``dev_home``)."""
    return dev_home(data_dir) / KEY_FILE_NAME


def load_signing_key(path: Path | None = None) -> SigningKey:
    """The private key at ``path`` (default ``signing_key_path()``), generated and stored 0600 if absent."""
    path = Path(path) if path is not None else signing_key_path()
    if not path.exists():
        _create_key_file(path)
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise TokenError(f"{path} does not hold an RSA private key")
    return key


def _create_key_file(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    # Written whole under a temporary name, then linked into place: a concurrent starter (the stack
    # and `memmy-local token` at once) either wins the link or reads the winner's complete file.
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink(missing_ok=True)


def key_id(key: VerifyingKey) -> str:
    """The RFC 7638 thumbprint of the public key, used as the tokens' ``kid``."""
    public = key.public_key() if isinstance(key, rsa.RSAPrivateKey) else key
    numbers = public.public_numbers()
    members = {"e": _b64_uint(numbers.e), "kty": "RSA", "n": _b64_uint(numbers.n)}
    digest = hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _b64_uint(value: int) -> str:
    raw = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def issue_token(
    sub: str,
    *,
    name: str | None = None,
    email: str | None = None,
    phone: str | None = None,
    ttl_seconds: int = DEFAULT_TTL_SECONDS,
    key_path: Path | None = None,
    issuer: str = DEFAULT_ISSUER,
    audience: str = DEFAULT_AUDIENCE,
    extra_claims: dict[str, Any] | None = None,
    clock: Clock = time.time,
) -> str:
    """A signed login token for ``sub``, with the profile claims a real login provider asserts as verified.

    ``extra_claims`` are merged last (tests use it to forge ``email_verified: false`` and the like).
    ``clock`` gives the issue time (seconds since the epoch).
    """
    if not sub:
        raise ValueError("sub must not be empty")
    key = load_signing_key(key_path)
    now = int(clock())
    claims: dict[str, Any] = {
        "sub": sub,
        "iss": issuer,
        "aud": audience,
        "iat": now,
        "exp": now + ttl_seconds,
    }
    claims |= profile_claims(name=name, email=email, phone=phone)
    claims |= extra_claims or {}
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": key_id(key)})


def mcp_resource_url(api_url: str) -> str:
    """The MCP endpoint of the API at ``api_url``: the resource (RFC 8707) MCP access tokens are for."""
    return f"{api_url.rstrip('/')}/mcp"


def issue_mcp_token(
    sub: str,
    *,
    resource: str,
    client_name: str | None = None,
    ttl_seconds: int = MCP_TTL_SECONDS,
    key_path: Path | None = None,
    issuer: str = DEFAULT_ISSUER,
    clock: Clock = time.time,
) -> str:
    """An MCP access token for ``sub`` as if client ``memmy-local-cli`` had just been allowed (``auth_time``
    now): what ``memmy-local token USER --mcp`` prints."""
    if not sub:
        raise ValueError("sub must not be empty")
    key = load_signing_key(key_path)
    from memmy_kb.domain.remote_mcp.tokens import mcp_access_claims

    now = int(clock())
    claims = mcp_access_claims(
        sub, issuer=issuer, resource=resource, client_id=CLI_MCP_CLIENT_ID, auth_time=now, now=now,
        ttl_seconds=ttl_seconds, client_name=client_name,
    )  # fmt: skip
    return jwt.encode(claims, key, algorithm=ALGORITHM, headers={"kid": key_id(key)})


def profile_claims(
    *, name: str | None = None, email: str | None = None, phone: str | None = None
) -> dict[str, Any]:
    """The profile claims a login provider asserts, each given one as verified (the dev tokens' and the dev
    identity provider's)."""
    claims: dict[str, Any] = {}
    if name is not None:
        claims["name"] = name
    if email is not None:
        claims |= {"email": email, "email_verified": True}
    if phone is not None:
        claims |= {"phone_number": phone, "phone_number_verified": True}
    return claims


def verify_token(
    token: str, *, key: VerifyingKey, issuer: str, audience: str, clock: Clock = time.time
) -> dict[str, Any]:
    """The token's claims if API Gateway's JWT authorizer would accept it; ``TokenError`` otherwise.

    Checked: RS256 signature (``alg: none`` and other algorithms refused), ``exp`` in the future, ``nbf`` and
    ``iat`` not in the future (by ``clock``, seconds since the epoch), ``iss`` equal to ``issuer``, ``aud``
    containing ``audience``, ``sub`` present. The first failed check, in PyJWT's order, names the reason.
    """
    if not token:
        raise TokenError("no token")
    public = key.public_key() if isinstance(key, rsa.RSAPrivateKey) else key
    # The authorizer picks the verification key from the issuer's key set by the token's ``kid``: a
    # token naming no key, or another key, finds none (even if this key would verify its signature).
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except jwt.InvalidTokenError as err:
        raise TokenError(f"invalid token: {type(err).__name__}") from err
    if kid != key_id(public):
        raise TokenError("the token's kid names no key of the issuer")
    try:
        # The signature and the claims' presence first, then the times, then the rest: PyJWT's order.
        signed: dict[str, Any] = jwt.decode(
            token,
            public,
            algorithms=[ALGORITHM],
            options={
                **_UNTIMED,
                "verify_iss": False,
                "verify_aud": False,
                "verify_sub": False,
                "verify_jti": False,
                "require": REQUIRED_CLAIMS,
            },
        )
        _check_times(signed, clock())
        return jwt.decode(
            token,
            public,
            algorithms=[ALGORITHM],
            issuer=issuer,
            audience=audience,
            options={
                **_UNTIMED,
                "verify_signature": False,
                "verify_iss": True,
                "verify_aud": True,
                "verify_sub": True,
                "verify_jti": True,
                "require": REQUIRED_CLAIMS,
            },
        )
    except jwt.ExpiredSignatureError as err:
        raise TokenError("the token has expired") from err
    except jwt.InvalidAudienceError as err:
        raise TokenError("the token does not have a valid audience") from err
    except jwt.InvalidIssuerError as err:
        raise TokenError("the token does not have a valid issuer") from err
    except jwt.InvalidTokenError as err:
        raise TokenError(f"invalid token: {type(err).__name__}") from err


def _check_times(claims: dict[str, Any], now: float) -> None:
    """PyJWT's ``iat``, ``nbf`` and ``exp`` checks (no leeway, the same errors), made at ``now``."""
    if "iat" in claims:
        try:
            iat = int(claims["iat"])
        except (ValueError, TypeError, OverflowError):
            raise jwt.InvalidIssuedAtError("Issued At claim (iat) must be an integer.") from None
        if iat > now:
            raise jwt.ImmatureSignatureError("The token is not yet valid (iat)")
    if "nbf" in claims:
        try:
            nbf = int(claims["nbf"])
        except (ValueError, TypeError, OverflowError):
            raise jwt.DecodeError("Not Before claim (nbf) must be an integer.") from None
        if nbf > now:
            raise jwt.ImmatureSignatureError("The token is not yet valid (nbf)")
    try:
        exp = int(claims["exp"])
    except (ValueError, TypeError, OverflowError):
        raise jwt.DecodeError("Expiration Time claim (exp) must be an integer.") from None
    if exp <= now:
        raise jwt.ExpiredSignatureError("Signature has expired")
