"""``/login-configuration``: what the desktop needs to log in with OpenID Connect, knowing only the cloud's URL."""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from memmy_kb.api.models.base import ApiModel

BearerToken = Literal["access_token", "id_token"]
BEARER_TOKENS: Final[tuple[BearerToken, ...]] = ("access_token", "id_token")


class LoginConfiguration(ApiModel):
    issuer: str = Field(
        description="OpenID Connect issuer; its discovery document is at /.well-known/openid-configuration"
    )
    client_id: str = Field(
        description="The desktop's public client id (authorization code with PKCE, loopback redirect)"
    )
    audience: str = Field(
        description="Audience (aud) the cloud's authorizer requires in the token the desktop sends"
    )
    scopes: list[str] = Field(description="Scopes to request")
    bearer_token: BearerToken = Field(
        description=(
            "Which token of the provider's token response the desktop sends as its bearer token: the one that"
            " carries the audience and the verified profile claims (id_token with the stack's Cognito pool)"
        )
    )
