"""The device page (RFC 8628) of the dev identity provider: the code first (wrong codes limited per client
and per pending request, docs/login.md), then the sign-in form; a mixin of ``provider.IdentityProvider``."""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from flask import Response, request

from . import pages
from .records import Identity
from .state import WRONG_CODE_WINDOW_SECONDS, WRONG_CODES_PER_CLIENT, IdentityState, normalize_user_code
from .web import html as _html

log = logging.getLogger("memmy_local.identity_provider")


class DevicePages:
    """``/device`` (GET: the code form; POST: the code, then the sign-in)."""

    state: IdentityState
    _form_secret: bytes

    if TYPE_CHECKING:  # the provider's, declared for the type checker only: nothing to call at run time

        def _signed_in(self, path: str, form: list[tuple[str, str]], secret: bytes) -> Identity | Response: ...

    def _device_page(self) -> Response:
        return _html(
            pages.device_code_page("/device", self._form_secret, code=request.args.get("user_code", ""))
        )

    def _device_posted(self) -> Response:
        return self._device_sign_in(_html, self._form_secret)

    def _device_sign_in(self, html: Callable[..., Response], secret: bytes) -> Response:
        form = list(request.form.items(multi=True))
        if "login_user_id" not in request.form:  # the code, first
            return self._device_code_entered(html, secret)
        if not pages.form_is_ours(secret, form, request.form.get(pages.FORM_TOKEN)):
            return html(pages.message_page("Refused", "This form was not made here; start again."), 400)
        user_code = normalize_user_code(request.form.get("user_code", ""))
        identity = self._signed_in("/device", form, secret)
        if isinstance(identity, Response):
            return identity
        if not self.state.approve_device(user_code, identity):
            return html(
                pages.message_page(
                    "Code expired",
                    "That code has expired, was used, or was refused after too many wrong codes; start again.",
                ),
                400,
            )
        return html(pages.message_page("Device connected", "You are signed in: go back to your device."))

    def _device_code_entered(self, html: Callable[..., Response], secret: bytes) -> Response:
        """The device page's first form: the user code, limited per client address and per request."""
        expected = pages.form_token(secret, [])
        if not hmac.compare_digest(expected, request.form.get(pages.FORM_TOKEN, "")):
            return html(pages.message_page("Refused", "This form was not made here; start again."), 400)
        typed_code = request.form.get("user_code", "")
        entry = self.state.enter_user_code(typed_code, wrong_code_client(request.remote_addr or ""))
        if entry.retry_after:
            log.warning(
                "device page: too many wrong codes from one client, refused for %d s", entry.retry_after
            )
            minutes = math.ceil(entry.retry_after / 60)
            text = (
                f"Too many wrong codes were typed here ({WRONG_CODES_PER_CLIENT} in "
                f"{WRONG_CODE_WINDOW_SECONDS // 60} minutes): wait {minutes} minute{'s' if minutes != 1 else ''}, "
                "then type the code again."
            )
            refused = html(pages.message_page("Too many wrong codes", text), 429)
            refused.headers["Retry-After"] = str(entry.retry_after)
            return refused
        pending = entry.request
        if pending is None:
            errors = ["That code is unknown, expired or already used."]
            return html(pages.device_code_page("/device", secret, code=typed_code, errors=errors), 400)
        intro = f"<p>Code: <strong>{escape(pending.user_code)}</strong></p>"
        return html(pages.sign_in_page("/device", [("user_code", pending.user_code)], secret, intro=intro))


def wrong_code_client(address: str) -> str:
    """Whom a wrong user code counts against: the client's address, every loopback address being one
    client (a local program can send from any of 127.0.0.0/8, each of which would otherwise bring a fresh
    allowance and one more counter)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return "loopback" if ip.is_loopback or (mapped is not None and mapped.is_loopback) else address
