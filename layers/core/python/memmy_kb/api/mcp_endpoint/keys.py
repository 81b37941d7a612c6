"""Which authorization server ``POST /mcp`` trusts, and where its signing keys come from.

The issuer is ``MCP_TOKEN_ISSUER`` (another authorization server), else ``MCP_AUTH_ISSUER`` (the service's
own server under a configured URL), else the service's own server at ``https://<the request's domain>``.
The keys are the JWKS at ``MCP_JWKS_URL``, else the public half of ``MCP_SIGNING_KEY``, the KMS key the
service's own server signs with, read from KMS through ``composition.get_mcp_auth()`` (never from the
server's own ``/oauth/jwks``: no call from the API to itself). Either way they are kept in a ``JwksCache``
for the container's life; a KMS error is ``KeysUnavailable`` (503), never a refusal of the token.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from memmy_kb import composition
from memmy_kb.api.mcp_endpoint.bearer import JwksCache, KeysUnavailable
from memmy_kb.settings import Settings


def token_issuer(settings: Settings, event: dict[str, Any]) -> str:
    """The ``iss`` the endpoint's tokens must carry (no trailing slash for its own server)."""
    if settings.mcp_token_issuer:
        return settings.mcp_token_issuer
    if settings.mcp_auth_issuer:
        return settings.mcp_auth_issuer
    return f"https://{event.get('requestContext', {}).get('domainName', '')}"


def signing_key_jwks(key_id: str) -> dict[str, Any]:
    """The public key set of the service's own authorization server (``key_id`` is the cache's name of
    ``MCP_SIGNING_KEY``; the signer knows its key)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        document = composition.get_mcp_auth().signer.jwks()
    except (BotoCoreError, ClientError) as err:
        raise KeysUnavailable(
            f"The signing key's public half could not be read: {type(err).__name__}"
        ) from err
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeysUnavailable("The signing key's public half is not a key set.")
    return document


@cache
def jwks_at(url: str) -> JwksCache:
    """The container's keys of the JWKS at ``url``."""
    return JwksCache(url)


@cache
def signing_key_set(key_id: str) -> JwksCache:
    """The container's keys of the KMS key ``key_id``."""
    return JwksCache(key_id, fetch=signing_key_jwks)


def token_keys(settings: Settings) -> JwksCache:
    """The keys the endpoint's tokens are checked against; ``KeysUnavailable`` when none are configured."""
    if settings.mcp_jwks_url:
        return jwks_at(settings.mcp_jwks_url)
    if settings.mcp_signing_key:
        return signing_key_set(settings.mcp_signing_key)
    raise KeysUnavailable("Neither MCP_JWKS_URL nor MCP_SIGNING_KEY is set.")
