"""``/login-configuration``: what the desktop needs to log in with OpenID Connect, knowing only the cloud's URL."""

from __future__ import annotations

from pydantic import Field

from memmy_kb.api.models.base import ApiModel


class LoginConfiguration(ApiModel):
    issuer: str = Field(description="OpenID Connect issuer; its discovery document is at /.well-known/openid-configuration")
    client_id: str = Field(description="The desktop's public client id (authorization code with PKCE, loopback redirect)")
    audience: str = Field(description="Audience the cloud's authorizer requires in access tokens")
    scopes: list[str] = Field(description="Scopes to request")
