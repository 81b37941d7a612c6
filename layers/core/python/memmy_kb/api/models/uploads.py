"""``POST /knowledge-bases/{kb_id}/uploads``: the file announced and the presigned POST for it; and
``POST .../files/{file_id}/replacements``: a file's next version announced, the same way."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import AfterValidator, Field

from memmy_kb.api.models.base import ApiModel
from memmy_kb.domain.display import hidden_characters
from memmy_kb.domain.knowledge_bases.sibling_names import normal_name

if TYPE_CHECKING:
    from memmy_kb.domain.uploads.issuing import IssuedUpload
    from memmy_kb.domain.uploads.replacements import IssuedReplacement, Unchanged

MAX_FILENAME_LENGTH = 255


def _clean_filename(value: str) -> str:
    # Stored and checked as the service compares names: trimmed, in NFC (memmy_kb.domain.knowledge_bases.sibling_names).
    value = normal_name(value)
    if not 1 <= len(value) <= MAX_FILENAME_LENGTH:
        raise ValueError(f"must be 1 to {MAX_FILENAME_LENGTH} characters after trimming")
    if "/" in value or "\\" in value or value in (".", ".."):
        raise ValueError("must be a file name, not a path")
    # The bidi overrides that make "exe\u202efdp.pdf" look like a PDF are among the hidden characters.
    if hidden_characters(value):
        raise ValueError("must not contain control, invisible or unassigned characters")
    return value


Filename = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_clean_filename)]
Sha256 = Annotated[
    str,
    Field(
        pattern=r"^[0-9a-fA-F]{64}$",
        description="The SHA-256 of the bytes about to be sent, in hex: bytes that differ are rejected"
        " (`sha256_mismatch`)",
    ),
    AfterValidator(str.lower),
]


class CreateUploadRequest(ApiModel):
    filename: Annotated[Filename, Field(description="The file's name, with one of the supported extensions")]
    size_bytes: Annotated[
        int, Field(strict=True, ge=1, description="The file's exact size in bytes (1 B to 100 MB)")
    ]
    content_type: Annotated[
        str | None, Field(max_length=255, description="Must fit the extension; derived from it when absent")
    ] = None
    folder_id: Annotated[
        str | None, Field(max_length=64, description="The destination folder; none for the root")
    ] = None
    sha256: Sha256 | None = None
    origin: Annotated[
        Literal["sync"] | None,
        Field(
            description="`sync`: a folder sync uploads it; the file carries it (`origin` in the listing), so"
            " that another desktop's sync of the knowledge base may replace or delete it (docs/sync.md)"
        ),
    ] = None


class UploadTicket(ApiModel):
    """A presigned POST: send ``fields`` as form fields, then the file as the last field, ``file``."""

    upload_id: str
    url: str
    fields: dict[str, str]
    expires_at: datetime

    @classmethod
    def from_issued(cls, issued: IssuedUpload) -> UploadTicket:
        return cls(
            upload_id=issued.upload.upload_id,
            url=issued.post.url,
            fields=issued.post.fields,
            expires_at=issued.post_expires_at,
        )


class CreateReplacementRequest(ApiModel):
    """A file's next version: its bytes are checked against the file's own name, which it keeps."""

    size_bytes: Annotated[
        int, Field(strict=True, ge=1, description="The new bytes' exact size (1 B to 100 MB)")
    ]
    content_type: Annotated[
        str | None,
        Field(max_length=255, description="Must fit the file's extension; derived from it when absent"),
    ] = None
    sha256: Annotated[
        Sha256 | None,
        Field(
            description="The new bytes' SHA-256: equal to the current version's, the answer is `unchanged`"
        ),
    ] = None
    if_version: Annotated[
        int | None,
        Field(
            strict=True,
            ge=1,
            description="The version being replaced: another answers 409 `version_conflict`",
        ),
    ] = None


class ReplacementTicket(ApiModel):
    """The replace recorded: send ``fields``, then the new bytes as the last field, ``file``."""

    status: Literal["issued"] = "issued"
    file_id: str
    replaces_version: int = Field(description="The version these bytes replace")
    upload_id: str
    url: str
    fields: dict[str, str]
    expires_at: datetime

    @classmethod
    def from_issued(cls, issued: IssuedReplacement) -> ReplacementTicket:
        upload = issued.upload
        assert upload.replaces is not None
        assert upload.if_version is not None
        return cls(
            file_id=upload.replaces,
            replaces_version=upload.if_version,
            upload_id=upload.upload_id,
            url=issued.post.url,
            fields=issued.post.fields,
            expires_at=issued.post_expires_at,
        )


class ReplacementUnchanged(ApiModel):
    """The bytes are the current version's: nothing was recorded, nothing is to be sent."""

    status: Literal["unchanged"] = "unchanged"
    file_id: str
    version: int

    @classmethod
    def from_unchanged(cls, unchanged: Unchanged) -> ReplacementUnchanged:
        return cls(file_id=unchanged.file.file_id, version=unchanged.file.version)
