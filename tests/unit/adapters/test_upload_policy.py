"""The presigned POST the upload route hands out, decoded: moto does not enforce any of it, so we check it here.

Signing is local to botocore (no AWS call), so a plain S3 client with fake credentials is enough.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import boto3
import pytest
from botocore.config import Config

from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.domain.storage import parse_upload_key, upload_object_key
from memmy_kb.domain.uploads.issuing import MAX_UPLOAD_BYTES, content_type_for, validate_upload
from memmy_kb.errors import InvalidInput, PayloadTooLarge, UnsupportedMediaType

BUCKET = "memmy-uploads-123456789012"
KEY = "uploads/kb_0123456789abcdef01234567/up_89abcdef0123456789abcdef"


@pytest.fixture
def storage(monkeypatch: pytest.MonkeyPatch) -> UploadStorage:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    client = boto3.client(
        "s3",
        region_name="us-east-1",
        aws_access_key_id="AKIAEXAMPLEEXAMPLE00",
        aws_secret_access_key="secret",
        aws_session_token="session-token",
        config=Config(signature_version="s3v4"),
    )
    return UploadStorage(BUCKET, client)


def decoded_policy(fields: dict[str, str]) -> dict:
    return json.loads(base64.b64decode(fields["policy"]))


def test_the_policy_pins_bucket_key_size_type_and_a_short_expiry(storage: UploadStorage) -> None:
    # When a POST for a 1234-byte markdown file is signed for ten minutes
    before = datetime.now(UTC)
    post = storage.presign_post(KEY, size_bytes=1234, content_type="text/markdown", expires_in=600)

    # Then its policy allows exactly that object and nothing else
    policy = decoded_policy(post.fields)
    conditions = policy["conditions"]
    assert {"bucket": BUCKET} in conditions
    assert {"key": KEY} in conditions  # the exact key: no starts-with, no ${filename}
    assert not any(isinstance(c, list) and c[0] == "starts-with" for c in conditions)
    assert ["content-length-range", 1234, 1234] in conditions
    assert {"Content-Type": "text/markdown"} in conditions
    expiration = datetime.fromisoformat(policy["expiration"].replace("Z", "+00:00"))
    assert before + timedelta(seconds=590) <= expiration <= before + timedelta(seconds=610)
    # And the form fields the client echoes match the policy
    assert post.fields["key"] == KEY
    assert post.fields["Content-Type"] == "text/markdown"


def test_the_post_is_signed_with_sigv4_and_carries_the_session_token(storage: UploadStorage) -> None:
    post = storage.presign_post(KEY, size_bytes=1, content_type="application/pdf", expires_in=300)

    fields = post.fields
    assert fields["x-amz-algorithm"] == "AWS4-HMAC-SHA256"
    assert fields["x-amz-credential"].startswith("AKIAEXAMPLEEXAMPLE00/")
    assert fields["x-amz-credential"].endswith("/us-east-1/s3/aws4_request")
    assert len(fields["x-amz-signature"]) == 64
    assert fields["x-amz-security-token"] == "session-token"
    # No SigV2 fields
    assert not {"AWSAccessKeyId", "signature"} & set(fields)
    conditions = decoded_policy(fields)["conditions"]
    for name in ("x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-security-token"):
        assert {name: fields[name]} in conditions
    assert post.url.startswith("https://")
    assert BUCKET in post.url


def test_a_presigned_get_is_sigv4_and_short_lived(storage: UploadStorage) -> None:
    url = storage.presign_get("verified/kb_1/up_1", expires_in=900)

    assert "X-Amz-Algorithm=AWS4-HMAC-SHA256" in url
    assert "X-Amz-Expires=900" in url


def test_object_keys_are_opaque_and_only_ours_parse() -> None:
    assert upload_object_key("kb_ab", "up_cd") == "uploads/kb_ab/up_cd"
    assert parse_upload_key("uploads/kb_ab/up_cd") == ("kb_ab", "up_cd")
    for key in ("uploads/kb_ab/up_cd/x", "uploads/kb_ab/../up_cd", "other/kb_ab/up_cd", "uploads/a.txt", ""):
        assert parse_upload_key(key) is None


@pytest.mark.parametrize(
    ("filename", "size", "error"),
    [
        ("a.exe", 1, UnsupportedMediaType),
        ("a.pdf.exe", 1, UnsupportedMediaType),
        (".pdf", 1, UnsupportedMediaType),
        ("a.pdf", MAX_UPLOAD_BYTES + 1, PayloadTooLarge),
    ],
)
def test_validation_refuses_other_types_and_sizes(filename: str, size: int, error: type[Exception]) -> None:
    with pytest.raises(error):
        validate_upload(filename, size, None)


def test_validation_derives_the_content_type_from_the_extension() -> None:
    assert validate_upload("Report.PDF", 1, None) == (
        "pdf",
        "application/pdf",
    )
    assert content_type_for("md", "text/plain; charset=utf-8") == "text/plain"
    with pytest.raises(InvalidInput) as refused:
        content_type_for("pdf", "application/x-msdownload")
    assert refused.value.code == "content_type_mismatch"
