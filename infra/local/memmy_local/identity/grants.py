"""The dev identity provider's Authlib parts: the grants (code with PKCE S256, refresh, device), the
device and revocation endpoints, the ID token and userinfo. Each reads the provider through
``issuer.TokenIssuer``; the client is public (``none`` client authentication everywhere)."""

from __future__ import annotations

from typing import Any

from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import (
    AccessDeniedError,
    InvalidGrantError,
    UnauthorizedClientError,
    grants,
)
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint, DeviceCodeGrant
from authlib.oidc.core import OpenIDCode, OpenIDToken, UserInfo, UserInfoEndpoint
from joserfc.jwk import RSAKey

from memmy_kb.api.mcp_auth.clients import S256Required as S256Required
from memmy_local.tokens import ALGORITHM, TokenError, verify_token

from .issuer import TokenIssuer
from .records import (
    CLIENT_ID,
    DEVICE_GRANT_TYPE,
    DEVICE_POLL_INTERVAL,
    AuthorizationCode,
    DeviceRequest,
    Identity,
    PublicClient,
    RefreshRecord,
)
from .resources import authorization_resource, check_token_resource
from .state import CODE_TTL_SECONDS, DEVICE_TTL_SECONDS


def _issuer(server: Any) -> TokenIssuer:
    """The provider an Authlib server was registered for (``server.idp``; Authlib has no type information)."""
    issuer: TokenIssuer = server.idp
    return issuer


class IdToken(OpenIDToken):  # type: ignore[misc]
    """The ID token: signed with the stack's key, for the client id, with ``auth_time`` and the profile."""

    def __init__(self, idp: TokenIssuer) -> None:
        self.idp = idp

    def resolve_client_private_key(self, client: Any) -> RSAKey:
        return self.idp.jwk

    def get_client_algorithm(self, client: Any) -> str:
        return ALGORITHM

    def get_encode_header(self, client: Any) -> dict[str, str]:
        return {"alg": ALGORITHM, "kid": self.idp.kid}

    def get_client_claims(self, client: Any) -> dict[str, Any]:
        now = int(self.idp.state.clock())
        return {"iss": self.idp.issuer, "aud": client.get_client_id(), "iat": now, "exp": now + self.idp.ttl}

    def get_compatible_claims(self, request: Any) -> dict[str, Any]:
        claims: dict[str, Any] = super().get_compatible_claims(request)
        claims["auth_time"] = request.user.auth_time
        return claims

    def generate_user_info(self, user: Identity, scope: str) -> UserInfo:
        return UserInfo(user.claims(scope))


class CodeIdToken(IdToken, OpenIDCode):  # type: ignore[misc]
    def __init__(self, idp: TokenIssuer) -> None:
        IdToken.__init__(self, idp)
        OpenIDCode.__init__(self, require_nonce=False)

    def exists_nonce(self, nonce: str, request: Any) -> bool:
        return False  # each code is single use; the client checks the nonce it sent


class _ResourceBound:
    """A grant whose tokens are for the resource its code or refresh token was granted for (RFC 8707):
    the MCP resource for an MCP client's, None (Memmy's API, audience ``memmy-kb``) for the desktop's."""

    server: Any
    request: Any

    def granted_resource(self) -> str | None:
        record = self.request.authorization_code or self.request.refresh_token
        return None if record is None else record.resource

    def check_requested_resource(self) -> None:
        check_token_resource(self.request.payload.datalist.get("resource", []), self.granted_resource())

    def generate_token(
        self,
        user: Identity | None = None,
        scope: str | None = None,
        grant_type: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        assert user is not None
        return _issuer(self.server).token_response(
            self.request.client, user, scope, self.granted_resource(), include_refresh_token
        )


class CodeGrant(_ResourceBound, grants.AuthorizationCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012

    def requested_resource(self, request: Any) -> str | None:
        requested = request.payload.datalist.get("resource", [])
        return authorization_resource(request.client, requested, _issuer(self.server).mcp_resource)

    def validate_authorization_request(self) -> str:
        redirect_uri: str = super().validate_authorization_request()
        try:
            self.requested_resource(self.request)
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri  # checked: the answer goes back to the client
            raise
        return redirect_uri

    def validate_token_request(self) -> None:
        super().validate_token_request()
        self.check_requested_resource()

    def save_authorization_code(self, code: str, request: Any) -> None:
        data, idp = request.payload.data, _issuer(self.server)
        idp.state.add_code(
            AuthorizationCode(
                code=code,
                client_id=request.client.get_client_id(),
                redirect_uri=request.payload.redirect_uri,
                scope=request.scope,
                identity=request.user,
                expires_at=idp.state.clock() + CODE_TTL_SECONDS,
                nonce=data.get("nonce"),
                code_challenge=data.get("code_challenge"),
                code_challenge_method=data.get("code_challenge_method"),
                resource=self.requested_resource(request),
            )
        )

    def query_authorization_code(self, code: str, client: Any) -> AuthorizationCode | None:
        return _issuer(self.server).state.take_code(code, client.get_client_id())

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        pass  # taken (gone) when it was presented

    def authenticate_user(self, authorization_code: AuthorizationCode) -> Identity:
        return authorization_code.identity


class RefreshGrant(_ResourceBound, grants.RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012
    INCLUDE_NEW_REFRESH_TOKEN = True

    def validate_token_request(self) -> None:
        super().validate_token_request()
        self.check_requested_resource()

    def authenticate_refresh_token(self, refresh_token: str) -> RefreshRecord | None:
        return _issuer(self.server).state.claim_refresh(refresh_token)

    def authenticate_user(self, refresh_token: RefreshRecord) -> Identity:
        return refresh_token.identity

    def revoke_old_credential(self, refresh_token: RefreshRecord) -> None:
        pass  # rotated away when it was presented (claim_refresh)


class DeviceGrant(DeviceCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["none"]  # noqa: RUF012

    def query_device_credential(self, device_code: str) -> DeviceRequest:
        credential = _issuer(self.server).state.device(device_code)
        if credential is None:
            raise InvalidGrantError("Unknown or used 'device_code'.")
        return credential

    def query_user_grant(self, user_code: str) -> tuple[Identity, bool] | None:
        grant = _issuer(self.server).state.user_grant(user_code)
        if grant is None:
            return None  # still pending
        identity, approved = grant
        if identity is None or not approved:
            raise AccessDeniedError(
                "Too many wrong codes were typed at the device page while this sign-in waited; start again."
            )
        return identity, approved

    def should_slow_down(self, credential: DeviceRequest) -> bool:
        return _issuer(self.server).state.poll_too_soon(credential.device_code)

    def create_token_response(self) -> Any:
        if not _issuer(self.server).state.drop_device(self.request.credential.device_code):
            raise InvalidGrantError("Unknown or used 'device_code'.")  # a concurrent poll took it
        return super().create_token_response()


class DeviceEndpoint(DeviceAuthorizationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = ["none"]  # noqa: RUF012
    EXPIRES_IN = DEVICE_TTL_SECONDS
    INTERVAL = DEVICE_POLL_INTERVAL

    def authenticate_client(self, request: Any) -> Any:
        client = super().authenticate_client(request)
        if not client.check_grant_type(DEVICE_GRANT_TYPE):
            raise UnauthorizedClientError("This client may not use the device authorization grant.")
        return client

    def get_verification_uri(self) -> str:
        return f"{_issuer(self.server).url}/device"

    def save_device_credential(self, client_id: str, scope: str | None, data: dict[str, Any]) -> None:
        _issuer(self.server).state.add_device(
            client_id, PublicClient(client_id).get_allowed_scope(scope), data
        )


class Revocation(RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = ["none"]  # noqa: RUF012

    def query_token(self, token_string: str, token_type_hint: str | None) -> RefreshRecord | None:
        # Access tokens are JWTs that live out their lifetime: revoking one is a no-op (RFC 7009 allows it).
        if token_type_hint == "access_token":  # noqa: S105 - a hint's name
            return None
        return _issuer(self.server).state.find_refresh(token_string)

    def revoke_token(self, token: RefreshRecord, request: Any) -> None:
        _issuer(self.server).state.revoke_family(token.family)


class VerifiedAccessToken:
    """A verified access token, as Authlib's resource protector wants it (for /userinfo)."""

    def __init__(self, claims: dict[str, Any]) -> None:
        self.claims = claims
        self.scope = str(claims.get("scope", ""))

    def is_expired(self) -> bool:
        return False  # verify_token checked exp

    def is_revoked(self) -> bool:
        return False

    def get_scope(self) -> str:
        return self.scope

    def get_client(self) -> PublicClient:
        return PublicClient(str(self.claims.get("client_id", CLIENT_ID)))

    def get_user(self) -> Identity:
        c = self.claims
        return Identity(c["sub"], c.get("name"), c.get("email"), c.get("phone_number"))


class AccessTokenValidator(BearerTokenValidator):  # type: ignore[misc]
    def __init__(self, idp: TokenIssuer) -> None:
        super().__init__()
        self.idp = idp

    def authenticate_token(self, token_string: str) -> VerifiedAccessToken | None:
        idp = self.idp
        try:
            claims = verify_token(
                token_string, key=idp.key, issuer=idp.issuer, audience=idp.audience, clock=idp.state.clock
            )
        except TokenError:
            return None
        return VerifiedAccessToken(claims)


class UserInfoRoute(UserInfoEndpoint):  # type: ignore[misc]
    def generate_user_info(self, user: Identity, scope: str) -> UserInfo:
        return UserInfo(user.claims(scope))

    def get_issuer(self) -> str:
        return str(_issuer(self.server).issuer)
