"""The HTTP API's JWT authorizer: a request without a valid token is refused with 401 before any function runs."""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from memmy_local.tokens import TokenError, VerifyingKey, verify_token

from .http_events import GatewayError


@dataclass(frozen=True)
class JwtAuthorizer:
    """The HTTP API JWT authorizer: identity source ``$request.header.Authorization``, one issuer, one audience."""

    key: VerifyingKey
    issuer: str
    audience: str

    def authorize(self, authorization: str | None) -> dict[str, Any]:
        """The verified claims of the token in ``authorization`` (``Bearer <jwt>`` or the bare JWT).

        Raises ``GatewayError(401)`` with API Gateway's ``www-authenticate`` explanation otherwise.
        """
        token = (authorization or "").strip()
        if token[:7].lower() == "bearer ":
            token = token[7:].strip()
        try:
            return verify_token(token, key=self.key, issuer=self.issuer, audience=self.audience)
        except TokenError as err:
            challenge = f'Bearer error="invalid_token" error_description="{err}"'
            raise GatewayError(HTTPStatus.UNAUTHORIZED, {"www-authenticate": challenge}) from err
