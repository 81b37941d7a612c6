"""The access tokens' signer (``TokenSigner``): an RSA key in KMS that never leaves it, RS256.

A token is ``base64url(header).base64url(claims).base64url(signature)`` with the header ``{"alg": "RS256",
"typ": "at+jwt", "kid": ...}`` (RFC 9068). KMS signs the signing input itself (``MessageType`` RAW, which
KMS hashes with SHA-256; it takes at most 4,096 bytes, far more than our claims need). The ``kid`` is the
RFC 7638 thumbprint of the public key, read from KMS once per container; ``jwks()`` is that key as a JWK,
what ``GET /oauth/jwks`` serves and the ``mcp`` function verifies with."""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from typing import Any

ALGORITHM = "RS256"
KMS_ALGORITHM = "RSASSA_PKCS1_V1_5_SHA_256"
MAX_SIGNING_INPUT = 4096  # bytes KMS signs as a RAW message


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _uint(value: int) -> str:
    return b64url(value.to_bytes((value.bit_length() + 7) // 8 or 1, "big"))


def _compact(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")


def rsa_jwk(public_key_der: bytes) -> dict[str, str]:
    """The RSA public key (DER SubjectPublicKeyInfo, as KMS gives it) as a JWK, ``kid`` its RFC 7638
    thumbprint."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.serialization import load_der_public_key

    key = load_der_public_key(public_key_der)
    if not isinstance(key, RSAPublicKey):
        raise ValueError("the signing key is not an RSA key")
    numbers = key.public_numbers()
    members = {"e": _uint(numbers.e), "kty": "RSA", "n": _uint(numbers.n)}  # RFC 7638 3.2: these, in order
    kid = b64url(hashlib.sha256(_compact(members)).digest())
    return {**members, "kid": kid, "use": "sig", "alg": ALGORITHM}


class KmsTokenSigner:
    """``TokenSigner`` over the KMS key ``key_id`` (its ARN, id or alias), through ``kms_client``."""

    def __init__(self, key_id: str, kms_client: Any) -> None:
        self.key_id = key_id
        self._kms = kms_client
        self._jwk: dict[str, str] | None = None
        self._lock = threading.Lock()

    def public_jwk(self) -> dict[str, str]:
        """The key's JWK, read from KMS on first use."""
        with self._lock:
            if self._jwk is None:
                answer = self._kms.get_public_key(KeyId=self.key_id)
                self._jwk = rsa_jwk(answer["PublicKey"])
            return self._jwk

    def sign(self, claims: dict[str, Any]) -> str:
        header = {"alg": ALGORITHM, "typ": "at+jwt", "kid": self.public_jwk()["kid"]}
        signing_input = f"{b64url(_compact(header))}.{b64url(_compact(claims))}".encode("ascii")
        if len(signing_input) > MAX_SIGNING_INPUT:
            raise ValueError(f"the token would be longer than the {MAX_SIGNING_INPUT} bytes KMS signs")
        answer = self._kms.sign(
            KeyId=self.key_id,
            Message=signing_input,
            MessageType="RAW",
            SigningAlgorithm=KMS_ALGORITHM,
        )
        return f"{signing_input.decode('ascii')}.{b64url(answer['Signature'])}"

    def jwks(self) -> dict[str, Any]:
        return {"keys": [dict(self.public_jwk())]}
