"""Fetching a client ID metadata document (``ClientMetadataFetcher``) with httpx, bounded: 3 s in all,
64 KB, no redirects, served as JSON.

The URL comes from whoever calls ``GET /oauth/authorize``, and the service fetches it from inside AWS: a
host that is an IP address or ``localhost`` is refused, and so is one that resolves to a private,
loopback, link-local or otherwise non-public address (the instance metadata service among them).
``allow_loopback`` lets the tests fetch from 127.0.0.1; ``check_hosts=False`` is the dev identity
provider's, which runs on the developer's own machine and fetches what they point it at. The check resolves
the host before the fetch, which connects by name again: a DNS answer that changes in between is not
caught here (the Lambda runs outside any VPC, so no private network is reachable from it in any case)."""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import httpx

from memmy_kb.domain.ports.mcp_auth import ClientMetadataProblem

FETCH_TIMEOUT_SECONDS = 3.0
MAX_DOCUMENT_BYTES = 64 * 1024

Resolver = Callable[[str], list[str]]


def resolve(host: str) -> list[str]:
    """The addresses ``host`` resolves to (IPv4 and IPv6)."""
    return [str(info[4][0]) for info in socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)]


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class HttpClientMetadata:
    """``fetch(url)``: the document's bytes, or ``ClientMetadataProblem`` with a sentence."""

    def __init__(
        self,
        http: httpx.Client,
        *,
        allow_loopback: bool = False,
        check_hosts: bool = True,
        resolver: Resolver = resolve,
        timeout: float = FETCH_TIMEOUT_SECONDS,
    ) -> None:
        self.http = http
        self.allow_loopback = allow_loopback
        self.check_hosts = check_hosts
        self.resolver = resolver
        self.timeout = timeout

    def fetch(self, url: str) -> bytes:
        if self.check_hosts:
            self.check_host(urlsplit(url).hostname or "")
        try:
            return self._fetch(url)
        except httpx.TimeoutException:
            raise ClientMetadataProblem(
                f"the client's metadata document did not arrive within {self.timeout:g} s."
            ) from None
        except httpx.HTTPError as err:
            raise ClientMetadataProblem(
                f"the client's metadata document could not be fetched ({type(err).__name__})."
            ) from None

    def check_host(self, host: str) -> None:
        """``ClientMetadataProblem`` unless ``host`` is a public host name (or loopback, when allowed)."""
        host = host.lower().rstrip(".")
        if self.allow_loopback and self._is_loopback(host):
            return
        if not host or host == "localhost" or host.endswith(".localhost") or _is_ip_literal(host):
            raise ClientMetadataProblem("the client_id URL must name its host by a public DNS name.")
        try:
            addresses = self.resolver(host)
        except (OSError, UnicodeError):
            raise ClientMetadataProblem(f"the client_id URL's host {host} cannot be resolved.") from None
        if not addresses or not all(ipaddress.ip_address(a.split("%")[0]).is_global for a in addresses):
            raise ClientMetadataProblem(f"the client_id URL's host {host} is not on the public internet.")

    def _is_loopback(self, host: str) -> bool:
        if host == "localhost":
            return True
        return _is_ip_literal(host) and ipaddress.ip_address(host).is_loopback

    def _fetch(self, url: str) -> bytes:
        with self.http.stream(
            "GET", url, headers={"Accept": "application/json"}, timeout=self.timeout, follow_redirects=False
        ) as response:
            if response.status_code != 200:
                raise ClientMetadataProblem(
                    f"the client's metadata document answered HTTP {response.status_code}, not 200."
                )
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if kind != "application/json" and not kind.endswith("+json"):
                raise ClientMetadataProblem(
                    "the client's metadata document is not served as application/json."
                )
            body, deadline = bytearray(), time.monotonic() + self.timeout
            for chunk in response.iter_bytes():
                body += chunk
                if time.monotonic() > deadline:  # httpx's timeout bounds each read, not the whole body
                    raise httpx.ReadTimeout("the body came too slowly")
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ClientMetadataProblem(
                        f"the client's metadata document is larger than {MAX_DOCUMENT_BYTES // 1024} KB."
                    )
            return bytes(body)
