"""The domain's own vocabulary (``memmy_kb.domain.engine``, ``memmy_kb.domain.storage``): small values
with no AWS or MemOS module behind them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from memmy_kb.domain.engine import (
    FileInput,
    MemosError,
    MemosFileTooLarge,
    MemosNotFound,
    MemosRejectedInput,
    MemosUnavailable,
    MemosUnsupportedFile,
)
from memmy_kb.domain.storage import parse_upload_key, upload_object_key, verified_object_key


def test_a_file_sent_inline_is_a_data_url_whose_repr_hides_the_bytes():
    file = FileInput.from_bytes("# 你好".encode(), name="zh.md", mime_type="text/markdown")
    assert file.content == "data:text/markdown;base64,IyDkvaDlpb0="
    assert "IyDkvaDlpb0" not in repr(file)


def test_a_file_without_content_is_refused():
    with pytest.raises(ValueError, match="content"):
        FileInput(content="")


@pytest.mark.parametrize(
    ("error", "did_nothing"),
    [
        (MemosUnavailable("refused", endpoint="/x", request_sent=False), True),
        (MemosUnavailable("internal", endpoint="/x", code=50004), True),
        (MemosRejectedInput("bad", endpoint="/x", code=40008), True),
        (MemosUnavailable("read timeout", endpoint="/x"), False),
        (MemosUnavailable("http 502", endpoint="/x", http_status=502), False),
    ],
)
def test_only_a_request_never_sent_or_answered_with_a_code_certainly_did_nothing(error, did_nothing):
    assert error.did_nothing is did_nothing


def test_the_file_refusals_are_rejected_input():
    assert issubclass(MemosUnsupportedFile, MemosRejectedInput)
    assert issubclass(MemosFileTooLarge, MemosRejectedInput)
    assert not issubclass(MemosNotFound, MemosRejectedInput)
    assert issubclass(MemosRejectedInput, MemosError)


def test_upload_keys_round_trip_and_other_keys_are_not_ours():
    key = upload_object_key("kb_0a", "up_1b")
    assert key == "uploads/kb_0a/up_1b"
    assert parse_upload_key(key) == ("kb_0a", "up_1b")
    assert parse_upload_key(verified_object_key("kb_0a", "up_1b")) is None
    assert parse_upload_key("uploads/kb_0a/up_1b/../x") is None


def test_the_vocabulary_imports_no_pydantic_no_adapter_and_no_aws():
    code = (
        "import sys, memmy_kb.domain.engine, memmy_kb.domain.storage\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'botocore', 'boto3', 'httpx')"
        " or m.startswith('memmy_kb.adapters') or m == 'memmy_kb.records'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout  # noqa: S603
    assert out.strip() == "[]"
