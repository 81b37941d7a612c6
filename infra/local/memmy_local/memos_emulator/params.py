"""MemOS request bodies read as MemOS reads them: ``null`` as absent, its error codes, its file limits.

A file comes as a URL, a base64 ``data:`` URL or bare base64, with a name (or one made from its MIME
type) whose extension MemOS must support, or, for an update, as the part ``file`` of a multipart form
beside the field ``file_id``; an error is an ``ApiError`` with MemOS's code.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

from werkzeug.formparser import parse_form_data

from .extract import SUPPORTED_EXTENSIONS

MAX_FILES_PER_REQUEST = 20
MAX_MEMORY_LIMIT = 25
MAX_PAGE_SIZE = 100
FILE_TYPES = frozenset({"document", "doc", "skill"})

_MIME_EXTENSIONS = {
    "application/pdf": "pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/msword": "doc",
    "text/plain": "txt",
    "text/markdown": "md",
    "text/x-markdown": "md",
    "application/json": "json",
    "application/xml": "xml",
    "text/xml": "xml",
}


class ApiError(Exception):
    """A MemOS error reply: ``code`` in the envelope, usually with HTTP 200."""

    def __init__(self, code: int, message: str, http_status: int = HTTPStatus.OK) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.http_status = http_status


@dataclass(frozen=True)
class FileSpec:
    name: str
    type: str
    content: bytes | None
    url: str | None


def opt(body: Mapping[str, Any], key: str) -> Any:
    """A field's value, with ``null`` treated as absent (as MemOS does)."""
    return body.get(key)


def required_str(body: Mapping[str, Any], key: str) -> str:
    value = opt(body, key)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ApiError(40002, f"required parameter missing: {key}")
    if not isinstance(value, str):
        raise ApiError(40000, f"parameter {key} must be a string")
    return value


def int_in(body: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = opt(body, key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ApiError(40000, f"parameter {key} must be an integer in {low}..{high}")
    return value


def str_list(body: Mapping[str, Any], key: str) -> list[str] | None:
    value = opt(body, key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ApiError(40000, f"parameter {key} must be a list of strings")
    return value


def parse_file(item: Any, max_file_bytes: int) -> FileSpec:
    if not isinstance(item, dict):
        raise ApiError(40000, "each file must be an object")
    content = required_str(item, "content")
    type_ = opt(item, "type") or "document"
    if type_ not in FILE_TYPES:
        raise ApiError(40000, "file type must be document or skill")
    name = opt(item, "name")
    if name is not None and not isinstance(name, str):
        raise ApiError(40000, "file name must be a string")
    url: str | None = None
    data: bytes | None = None
    mime = None
    if content.startswith(("http://", "https://")):
        url = content
        name = name or unquote(PurePosixPath(urlsplit(content).path).name)
    elif content.startswith("data:"):
        header, sep, payload = content.partition(",")
        if not sep or not header.endswith(";base64"):
            raise ApiError(40008, "data URL content must be base64")
        mime = header[5:].split(";")[0].lower()
        data = b64decode(payload, 40008, max_file_bytes)
    else:
        data = b64decode(content, 40009, max_file_bytes)
    if not name:
        name = "file." + _MIME_EXTENSIONS.get(mime or "", "bin")
    return _checked(FileSpec(name=name, type=type_, content=data, url=url), max_file_bytes)


def _checked(spec: FileSpec, max_file_bytes: int) -> FileSpec:
    extension = PurePosixPath(spec.name).suffix.lower().lstrip(".")
    if spec.type != "skill" and extension not in SUPPORTED_EXTENSIONS:
        raise ApiError(
            50107, f"file format not allowed: .{extension}" if extension else "file has no extension"
        )
    if spec.content is not None and len(spec.content) > max_file_bytes:
        raise ApiError(50104, "a file exceeds 100 MB")
    return spec


def multipart_update(content_type: str, raw: bytes, max_file_bytes: int) -> dict[str, Any]:
    """An update sent as a multipart form: ``{"file_id", "file": FileSpec}`` from the field ``file_id`` and
    the file part ``file`` (its name from the part's filename)."""
    environ = {
        "wsgi.input": io.BytesIO(raw),
        "CONTENT_LENGTH": str(len(raw)),
        "CONTENT_TYPE": content_type,
        "REQUEST_METHOD": "POST",
    }
    _, form, files = parse_form_data(environ)
    part = files.get("file")
    if part is None:
        raise ApiError(40002, "required parameter missing: file")
    data = part.read()
    spec = FileSpec(name=part.filename or "", type="document", content=data, url=None)
    if not spec.name:
        raise ApiError(40002, "the file part has no filename")
    return {"file_id": form.get("file_id"), "file": _checked(spec, max_file_bytes)}


def b64decode(payload: str, code: int, max_file_bytes: int) -> bytes:
    if len(payload) > max_file_bytes * 4 // 3 + 4:
        raise ApiError(50104, "a file exceeds 100 MB")
    try:
        return base64.b64decode("".join(payload.split()), validate=True)
    except (binascii.Error, ValueError):
        raise ApiError(code, "invalid base64 content") from None
