"""The formats beyond what MemOS parses itself (``memmy_kb.domain.uploads.formats``): ``.html``/``.htm`` accepted and
converted to Markdown by the ingest (``memmy_kb.domain.uploads.conversion``), ``.rst`` and plain text without an
extension accepted and sent as text; an extension-less file is taken only as UTF-8 without a NUL byte. The
upload request's checks, the content checks, the conversion, and what the ingest hands MemOS, on the
fakes."""

from __future__ import annotations

import base64
from http import HTTPStatus

import pytest

from memmy_kb.domain.knowledge_bases.naming import memos_file_name
from memmy_kb.domain.uploads import delivery, ingest
from memmy_kb.domain.uploads.conversion import html_to_markdown
from memmy_kb.domain.uploads.formats import MAX_CONVERTED_BYTES, sent_filename
from memmy_kb.domain.uploads.issuing import validate_upload
from memmy_kb.domain.uploads.verification import NOT_UTF8, UNSUPPORTED, MemorySource, verify_content
from memmy_kb.errors import DomainError
from memmy_kb.records import KbCapacity
from tests.support.factories import T0, kb_record, owner_grant_for, upload_record
from tests.support.fakes import FakeKnowledgeEngine, FakeStores, FakeUploadObjects

PAGE = (
    "<!doctype html><html><head><title>报销</title><style>h1 {color: red}</style></head><body>"
    "<h1>差旅报销</h1><p>需要<b>增值税发票</b>和审批单。</p><script>steal()</script>"
    "<ul><li>机票行程单</li><li>酒店发票</li></ul></body></html>"
).encode()


@pytest.mark.parametrize(
    ("filename", "extension", "content_type"),
    [
        ("指南.html", "html", "text/html"),
        ("INDEX.HTM", "htm", "text/html"),
        ("readme.rst", "rst", "text/x-rst"),
        ("README", "", "text/plain"),
        ("LICENSE", "", "text/plain"),
    ],
)
def test_html_rst_and_extensionless_names_are_accepted(
    filename: str, extension: str, content_type: str
) -> None:
    assert validate_upload(filename, 100, None) == (extension, content_type)


def test_another_type_is_refused_naming_every_format_taken() -> None:
    with pytest.raises(DomainError) as refused:
        validate_upload("setup.exe", 100, None)

    assert refused.value.status == HTTPStatus.UNSUPPORTED_MEDIA_TYPE
    assert ".html, .htm, .rst and plain text without an extension" in refused.value.message


def test_html_larger_than_the_conversion_takes_is_refused_up_front() -> None:
    validate_upload("big.txt", MAX_CONVERTED_BYTES + 1, None)

    with pytest.raises(DomainError) as refused:
        validate_upload("big.html", MAX_CONVERTED_BYTES + 1, None)

    assert refused.value.status == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert refused.value.message == "HTML files can be at most 5 MB."


@pytest.mark.parametrize(
    ("extension", "data", "reason"),
    [
        ("", "笔记\n第二行".encode(), None),
        ("", b"ELF\x00\x01\x02", UNSUPPORTED),
        ("", b"\xff\xfe\x00", NOT_UTF8),
        ("rst", "标题\n====\n".encode(), None),
        ("rst", b"\xff", NOT_UTF8),
        ("html", PAGE, None),
        ("html", b"<p>caf\xe9</p>", NOT_UTF8),
        ("txt", b"a\x00b", None),  # a named text type keeps its own rule: UTF-8
    ],
)
def test_the_content_checks_of_the_new_formats(extension: str, data: bytes, reason: str | None) -> None:
    assert verify_content(MemorySource(data), extension) == reason


@pytest.mark.parametrize(
    ("filename", "sent"),
    [
        ("指南.html", "指南.md"),
        ("a.HTM", "a.md"),
        ("x.rst", "x.txt"),
        ("README", "README.txt"),
        ("a.pdf", "a.pdf"),
    ],
)
def test_the_name_memos_gets_has_the_extension_of_the_form_it_gets(filename: str, sent: str) -> None:
    assert sent_filename(filename) == sent


def test_html_becomes_markdown_without_its_scripts_styles_or_head() -> None:
    markdown = html_to_markdown(PAGE.decode())

    assert markdown == "# 差旅报销\n\n需要**增值税发票**和审批单。\n\n* 机票行程单\n* 酒店发票\n"


def _ingest(
    stores: FakeStores, memos: FakeKnowledgeEngine, filename: str, data: bytes, content_type: str, inline: int
) -> ingest.IngestOutcome:
    kb = kb_record("kb_1", memos_kb_id=memos.create_knowledgebase("memmy:kb_1"))
    stores.table.seed(kb, owner_grant_for(kb))
    upload = upload_record(
        "up_1", filename=filename, size_bytes=len(data), content_type=content_type, created_at=T0
    ).model_copy(update={"memos_kb_id": kb.memos_kb_id})
    stores.table.seed(upload)
    objects = FakeUploadObjects()
    objects.put("uploads/kb_1/up_1", data)
    config = ingest.IngestConfig(
        inline_max_bytes=inline,
        get_url_ttl_seconds=120,
        capacity=KbCapacity(max_files=10, max_bytes=1_000_000),
        activity_retention_days=30,
    )
    return delivery.ingest_object(
        stores.kbs,
        stores.contents,
        objects,
        memos,
        "uploads/kb_1/up_1",
        config=config,
        clock=lambda: T0,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("inline", [1024 * 1024, 16], ids=["read-whole", "stored"])
def test_an_html_upload_reaches_memos_as_markdown_and_keeps_its_own_name(
    stores: FakeStores, memos: FakeKnowledgeEngine, inline: int
) -> None:
    outcome = _ingest(stores, memos, "差旅指南.html", PAGE, "text/html", inline)

    assert outcome.result == "submitted"
    [sent] = memos.inputs
    assert sent.name == memos_file_name("差旅指南.md", "up_1")
    assert (
        sent.content
        == "data:text/markdown;base64," + base64.b64encode(html_to_markdown(PAGE.decode()).encode()).decode()
    )
    [file] = stores.contents.query_kb_items("kb_1")[1]
    assert file.name == "差旅指南.html"


def test_an_extensionless_text_file_reaches_memos_as_text(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    data = "发布清单每周一评审。\n".encode()

    assert _ingest(stores, memos, "NOTES", data, "text/plain", 1024).result == "submitted"

    [sent] = memos.inputs
    assert sent.name == memos_file_name("NOTES.txt", "up_1")
    assert sent.content == "data:text/plain;base64," + base64.b64encode(data).decode()


def test_an_extensionless_binary_is_rejected_before_memos_is_asked(
    stores: FakeStores, memos: FakeKnowledgeEngine
) -> None:
    outcome = _ingest(stores, memos, "program", b"\x7fELF\x02\x01\x01\x00", "text/plain", 1024)

    assert (outcome.result, outcome.reason) == ("rejected", UNSUPPORTED)
    assert memos.inputs == []
