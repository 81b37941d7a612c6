"""The desktop's sign-in settings for its unit tests: a provider at ``ISSUER`` that no test runs (the flows
are driven without a network; tests/support/oidc_provider.py is the one that runs)."""

from __future__ import annotations

from memmy_kb_client.desktop import oidc

ISSUER = "https://id.example"
CLIENT = "memmy-desktop"

PROVIDER = oidc.Provider(
    cloud="https://api.example",
    issuer=ISSUER,
    client_id=CLIENT,
    audience="memmy-kb",
    scopes=("openid", "profile", "email", "offline_access"),
    bearer="access_token",
    authorization_endpoint=f"{ISSUER}/authorize",
    token_endpoint=f"{ISSUER}/token",
    jwks_uri=f"{ISSUER}/jwks.json",
)
