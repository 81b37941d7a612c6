"""Client ID metadata documents (memmy_kb.domain.mcp_auth.metadata_documents): which client_id is one, which
URL may be fetched, and what a fetched document's bytes must say."""

from __future__ import annotations

import json

import pytest

from memmy_kb.domain.mcp_auth.clients import METADATA_DOCUMENT, ClientMetadataProblem
from memmy_kb.domain.mcp_auth.metadata_documents import (
    checked_document_url,
    is_metadata_document_url,
    parse_client_metadata,
)

URL = "https://agent.example/oauth/client.json"


def document(**over: object) -> bytes:
    body = {"client_id": URL, "client_name": "Agent\u202e by URL", "redirect_uris": ["http://127.0.0.1:9/cb"],
            "token_endpoint_auth_method": "none"} | over  # fmt: skip
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("client_id", "is_url"),
    [("https://a.example/c.json", True), ("https://a.example/", False), ("https://a.example", False),
     ("http://a.example/c.json", False), ("mcp-abc", False), ("memmy-desktop", False)],
)  # fmt: skip
def test_a_metadata_document_client_id_is_an_https_url_with_a_path(client_id: str, is_url: bool) -> None:
    assert is_metadata_document_url(client_id) is is_url


@pytest.mark.parametrize(
    ("url", "says"),
    [("https://a.example/x/../c.json", "'..'"), ("https://a.example/c.json#f", "no fragment"),
     ("https://u:p@a.example/c.json", "no user name"), ("https://a.example/" + "x" * 2000, "at most 2000")],
)  # fmt: skip
def test_a_url_with_dot_segments_a_fragment_credentials_or_too_long_is_refused(url: str, says: str) -> None:
    with pytest.raises(ClientMetadataProblem, match=says):
        checked_document_url(url)


def test_a_document_naming_itself_makes_a_public_client_with_its_cleaned_name() -> None:
    record = parse_client_metadata(URL, document(), now=12.0)

    assert (record.client_id, record.kind, record.created_at) == (URL, METADATA_DOCUMENT, 12.0)
    assert record.client_name == "Agent by URL"  # the bidi override is not shown
    assert record.redirect_uris == ("http://127.0.0.1:9/cb",)
    assert record.application_type == "native"


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1]", "not a JSON object"),
        (document(client_id="https://agent.example/other"), "another client_id"),
        (document(token_endpoint_auth_method="client_secret_basic"), "public client"),
        (document(redirect_uris=["http://agent.example/cb"]), "neither an https URL"),
        (document(application_type="tv"), "native' or 'web"),
    ],
)
def test_a_document_that_cannot_be_used_says_why(body: bytes, says: str) -> None:
    with pytest.raises(ClientMetadataProblem, match=says):
        parse_client_metadata(URL, body, now=0.0)
