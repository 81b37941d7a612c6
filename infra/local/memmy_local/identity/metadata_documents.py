"""Client ID metadata documents: a ``client_id`` that is an https URL with a path names a JSON document of
the client's metadata, fetched from that URL (the MCP authorization spec's preferred way for a client
the provider has never seen). The fetch is bounded: 3 s, 64 KB, no redirects; the document must name
itself as ``client_id``, be a public client's and give its redirect URIs."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

import httpx

from .clients import (
    METADATA_DOCUMENT,
    ClientMetadataProblem,
    ClientRecord,
    checked_application_type,
    checked_redirect_uris,
    clean_client_name,
)

FETCH_TIMEOUT_SECONDS = 3.0
MAX_DOCUMENT_BYTES = 64 * 1024
CACHE_SECONDS = 600  # a document fetched is used for this long before it is fetched again
MAX_URL_LENGTH = 2000


def is_metadata_document_url(client_id: str) -> bool:
    """An https URL with a path other than ``/``: what a client ID metadata document's ``client_id`` is."""
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/")


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot name a metadata document (beyond being an https URL with a path), or None."""
    parts = urlsplit(url)
    segments = parts.path.split("/")
    if len(url) > MAX_URL_LENGTH:
        return f"the client_id URL may have at most {MAX_URL_LENGTH} characters."
    if parts.fragment or "#" in url or parts.username is not None or parts.password is not None:
        return "the client_id URL may have no fragment and no user name."
    if "." in segments or ".." in segments:
        return "the client_id URL may have no '.' or '..' path segments."
    return None


def fetch_client_metadata(url: str, http: httpx.Client, *, now: float | None = None) -> ClientRecord:
    """The client named by the metadata document at ``url``; ``ClientMetadataProblem`` with a sentence
    when it cannot be fetched or used."""
    problem = url_problem(url)
    if problem is not None:
        raise ClientMetadataProblem(problem)
    body = _fetch(url, http)
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ClientMetadataProblem("the client's metadata document is not JSON.") from None
    if not isinstance(document, dict):
        raise ClientMetadataProblem("the client's metadata document is not a JSON object.")
    if document.get("client_id") != url:
        raise ClientMetadataProblem("the client's metadata document names another client_id than its URL.")
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise ClientMetadataProblem(
            "the client's metadata document must be a public client's (token_endpoint_auth_method none)."
        )
    return ClientRecord(
        client_id=url,
        kind=METADATA_DOCUMENT,
        redirect_uris=checked_redirect_uris(document.get("redirect_uris")),
        created_at=time.time() if now is None else now,
        client_name=clean_client_name(document.get("client_name")),
        application_type=checked_application_type(document.get("application_type")),
    )


def _fetch(url: str, http: httpx.Client) -> bytes:
    try:
        with http.stream(
            "GET",
            url,
            headers={"Accept": "application/json"},
            timeout=FETCH_TIMEOUT_SECONDS,
            follow_redirects=False,
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
            body, deadline = bytearray(), time.monotonic() + FETCH_TIMEOUT_SECONDS
            for chunk in response.iter_bytes():
                body += chunk
                if time.monotonic() > deadline:  # httpx's timeout bounds each read, not the whole body
                    raise httpx.ReadTimeout("the body came too slowly")
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise ClientMetadataProblem(
                        f"the client's metadata document is larger than {MAX_DOCUMENT_BYTES // 1024} KB."
                    )
            return bytes(body)
    except httpx.TimeoutException:
        raise ClientMetadataProblem(
            f"the client's metadata document did not arrive within {FETCH_TIMEOUT_SECONDS:g} s."
        ) from None
    except httpx.HTTPError as err:
        raise ClientMetadataProblem(
            f"the client's metadata document could not be fetched ({type(err).__name__})."
        ) from None
