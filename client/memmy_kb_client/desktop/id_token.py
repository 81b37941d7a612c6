"""The ID token's checks before anything of a sign-in is kept: signature (joserfc, imported only here),
issuer, audience, expiry, subject and nonce (docs/desktop.md, "Signing in")."""

from __future__ import annotations

import base64
import json
import secrets
from typing import Any, Final

ID_TOKEN_ALGORITHMS: Final = ("RS256", "RS384", "RS512", "PS256", "ES256")


class LoginError(Exception):
    """A login step failed; ``code`` and the message may be shown (they never hold a token)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def verify_id_token(
    id_token: str,
    keys: dict[str, Any],
    *,
    issuer: str,
    client_id: str,
    now: float,
    nonce: str | None = None,
    subject: str | None = None,
) -> dict[str, Any]:
    """The ID token's claims once its signature (the key its ``kid`` names), ``iss``, ``aud``, ``exp``
    and (when given) ``nonce`` and ``sub`` hold; else ``LoginError("id_token_invalid", why)``."""
    from joserfc import jwt
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

    def refused(why: str) -> LoginError:
        return LoginError("id_token_invalid", f"the ID token was refused: {why}")

    try:
        key_set = KeySet.import_key_set(keys)  # type: ignore[arg-type]
        header = json.loads(_b64(id_token.split(".")[0]))
        key = key_set.get_by_kid(header.get("kid") if isinstance(header, dict) else None)
        claims = jwt.decode(id_token, key, algorithms=list(ID_TOKEN_ALGORITHMS)).claims
    except (JoseError, ValueError, IndexError, TypeError) as err:
        raise refused(f"its signature does not verify ({type(err).__name__})") from None
    if claims.get("iss") != issuer:
        raise refused("another issuer")
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
    if client_id not in audiences:
        raise refused("not for this client (aud)")
    if len(audiences) > 1 and claims.get("azp") not in (None, client_id):
        raise refused("authorized for another party (azp)")
    expires = claims.get("exp")
    if not isinstance(expires, int | float) or isinstance(expires, bool) or expires <= now:
        raise refused("expired")
    if nonce is not None:
        offered = claims.get("nonce")
        if not isinstance(offered, str) or not secrets.compare_digest(offered.encode(), nonce.encode()):
            raise refused("not the nonce of this sign-in")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise refused("no subject")
    if subject is not None and sub != subject:
        raise refused("another subject than the signed-in one")
    return dict(claims)


def _b64(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
