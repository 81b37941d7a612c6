"""The dev identity provider's two discovery documents: OpenID Connect's, which the desktop reads, and
RFC 8414's authorization server metadata, which MCP clients read (with RFC 7591 registration, client ID
metadata documents, PKCE S256 and RFC 9207's ``iss``)."""

from __future__ import annotations

from typing import Any

from memmy_local.tokens import ALGORITHM, MCP_SCOPE

from .records import DEVICE_GRANT_TYPE, SCOPES


def openid_configuration(base: str, issuer: str) -> dict[str, Any]:
    """``/.well-known/openid-configuration``: the desktop's view of the provider at ``base``."""
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "device_authorization_endpoint": f"{base}/device_authorization",
        "revocation_endpoint": f"{base}/revoke",
        "userinfo_endpoint": f"{base}/userinfo",
        "jwks_uri": f"{base}/jwks.json",
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT_TYPE],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": [ALGORITHM],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "claims_supported": [
            "sub", "iss", "aud", "iat", "exp", "auth_time", "nonce", "name",
            "email", "email_verified", "phone_number", "phone_number_verified",
        ],
    }  # fmt: skip


def authorization_server_metadata(base: str, issuer: str) -> dict[str, Any]:
    """``/.well-known/oauth-authorization-server`` (RFC 8414), as the MCP authorization spec reads it."""
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
        "jwks_uri": f"{base}/jwks.json",
        "revocation_endpoint": f"{base}/revoke",
        "device_authorization_endpoint": f"{base}/device_authorization",
        "scopes_supported": [*SCOPES, MCP_SCOPE],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT_TYPE],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "client_id_metadata_document_supported": True,
        "authorization_response_iss_parameter_supported": True,
    }
