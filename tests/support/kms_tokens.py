"""Access tokens signed by a KMS RSA key on moto, as the service's own MCP authorization server signs them
(RS256 over the JWS signing input, ``MessageType`` RAW), and the key's public half as a JWKS.

``KmsSigner`` stands in for the authorization server's signer (``McpAuthPorts.signer``) where a test needs
only its ``sign`` and ``jwks``: it speaks to KMS through boto3 as a signer must, so a KMS error reaches the
caller as the ``ClientError`` it is.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import boto3
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_der_public_key
from jwt.algorithms import RSAAlgorithm

REGION = "us-east-1"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def signing_key(description: str = "mcp test signing key") -> str:
    """A new RSA_2048 SIGN_VERIFY key on moto (call inside ``mock_aws``); its ARN."""
    kms = boto3.client("kms", region_name=REGION)
    metadata = kms.create_key(KeySpec="RSA_2048", KeyUsage="SIGN_VERIFY", Description=description)[
        "KeyMetadata"
    ]
    return str(metadata["Arn"])


@dataclass
class KmsSigner:
    """Signs with, and publishes, the KMS key ``key_arn``; ``kid`` is the key's id."""

    key_arn: str

    @property
    def kid(self) -> str:
        return self.key_arn.rsplit("/", 1)[-1]

    def _kms(self) -> Any:
        return boto3.client("kms", region_name=REGION)

    def sign(self, claims: dict[str, Any]) -> str:
        header = {"alg": "RS256", "typ": "at+jwt", "kid": self.kid}
        signing_input = f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"
        signature = self._kms().sign(
            KeyId=self.key_arn,
            Message=signing_input.encode(),
            MessageType="RAW",
            SigningAlgorithm="RSASSA_PKCS1_V1_5_SHA_256",
        )["Signature"]
        return f"{signing_input}.{_b64(signature)}"

    def jwks(self) -> dict[str, Any]:
        der = self._kms().get_public_key(KeyId=self.key_arn)["PublicKey"]
        public = load_der_public_key(der)
        assert isinstance(public, RSAPublicKey)
        entry = json.loads(RSAAlgorithm.to_jwk(public))
        return {"keys": [{**entry, "kid": self.kid, "use": "sig", "alg": "RS256"}]}


@dataclass
class SignerPorts:
    """What the mcp function reads of ``composition.get_mcp_auth()``: the signer."""

    signer: KmsSigner
