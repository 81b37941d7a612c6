"""Client ID metadata documents: a ``client_id`` that is an https URL with a path names a JSON document of
the client's metadata, fetched from that URL (the MCP authorization spec's preferred way for a client
the server has never seen). The fetch is the adapter's (``ClientMetadataFetcher``: 3 s, 64 KB, no
redirects); here are which URLs may name a document and what its bytes must say: the document must name
itself as ``client_id``, be a public client's and give its redirect URIs."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

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


def checked_document_url(url: str) -> str:
    """``url`` if it may name a metadata document; ``ClientMetadataProblem`` otherwise."""
    problem = url_problem(url)
    if problem is not None:
        raise ClientMetadataProblem(problem)
    return url


def parse_client_metadata(url: str, body: bytes, *, now: float) -> ClientRecord:
    """The client the metadata document ``body`` fetched from ``url`` names; ``ClientMetadataProblem``
    with a sentence when it cannot be used."""
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
        created_at=now,
        client_name=clean_client_name(document.get("client_name")),
        application_type=checked_application_type(document.get("application_type")),
    )
