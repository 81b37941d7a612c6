"""The ZIP container of a .docx, checked through ranged reads: its directory, its sizes, one member's bytes.

Nothing here unpacks the archive. The central directory (two ranged reads) gives each member's name and
its declared sizes, which is enough to refuse a zip bomb before anything is inflated; one member (the
document's XML) is then inflated as a stream, a megabyte at a time, for the XML check to read.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol

# A real .docx directory is a few KB; this bound keeps a hostile one from costing memory.
MAX_ZIP_DIRECTORY_BYTES: Final = 4 * 1024 * 1024
_CHUNK: Final = 1024 * 1024

_EOCD = struct.Struct("<4sHHHHIIH")
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_EOCD = struct.Struct("<4sQHHIIQQQQ")
# signature, method, compressed size, uncompressed size, name/extra/comment lengths, local header offset
_CENTRAL_ENTRY = struct.Struct("<4s6xH8xIIHHH8xI")
_LOCAL_HEADER = struct.Struct("<4s22xHH")
_MAX_EOCD_SEARCH = _EOCD.size + 0xFFFF  # the record plus the longest possible archive comment
_STORED, _DEFLATED = 0, 8


class ByteSource(Protocol):
    """One stored object: its size, ranged reads, and a single streamed pass over its bytes."""

    @property
    def size(self) -> int: ...

    def read_range(self, start: int, length: int) -> bytes: ...

    def chunks(self) -> Iterable[bytes]: ...


@dataclass(frozen=True)
class ZipMember:
    name: str
    method: int
    compressed_size: int
    uncompressed_size: int
    header_offset: int


def zip_members(source: ByteSource) -> Iterator[ZipMember]:
    """The members listed in a ZIP's central directory, read with two ranged reads.

    Raises ValueError when the archive's end records or directory are missing, inconsistent or larger
    than ``MAX_ZIP_DIRECTORY_BYTES``. Sizes a ZIP64 entry keeps in its extra field read as 0xFFFFFFFF.
    """
    tail_start = max(0, source.size - _MAX_EOCD_SEARCH)
    tail = source.read_range(tail_start, source.size - tail_start)
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or at + _EOCD.size > len(tail):
        raise ValueError("no end of central directory record")
    _, _, _, _, entries, dir_size, dir_offset, _ = _EOCD.unpack_from(tail, at)
    if 0xFFFF in (entries,) or 0xFFFFFFFF in (dir_size, dir_offset):
        entries, dir_size, dir_offset = _zip64_directory(source, tail, at, tail_start)
    if dir_size > MAX_ZIP_DIRECTORY_BYTES or dir_offset + dir_size > source.size:
        raise ValueError("central directory out of bounds")
    directory = source.read_range(dir_offset, dir_size)
    position = 0
    for _ in range(entries):
        if position + _CENTRAL_ENTRY.size > len(directory):
            raise ValueError("truncated central directory")
        signature, method, compressed, uncompressed, name_len, extra_len, comment_len, offset = (
            _CENTRAL_ENTRY.unpack_from(directory, position)
        )
        if signature != b"PK\x01\x02":
            raise ValueError("bad central directory entry")
        start = position + _CENTRAL_ENTRY.size
        name = directory[start : start + name_len].decode("utf-8", errors="replace")
        yield ZipMember(name, method, compressed, uncompressed, offset)
        position = start + name_len + extra_len + comment_len


def _zip64_directory(source: ByteSource, tail: bytes, at: int, tail_start: int) -> tuple[int, int, int]:
    locator_at = at - _ZIP64_LOCATOR.size
    if locator_at < 0:
        raise ValueError("no ZIP64 locator")
    signature, _, record_offset, _ = _ZIP64_LOCATOR.unpack_from(tail, locator_at)
    if signature != b"PK\x06\x07" or record_offset + _ZIP64_EOCD.size > tail_start + locator_at:
        raise ValueError("bad ZIP64 locator")
    record = source.read_range(record_offset, _ZIP64_EOCD.size)
    if len(record) != _ZIP64_EOCD.size:
        raise ValueError("truncated ZIP64 record")
    fields = _ZIP64_EOCD.unpack(record)
    if fields[0] != b"PK\x06\x06":
        raise ValueError("bad ZIP64 record")
    return fields[7], fields[8], fields[9]


def inflated_member(archive: ByteSource, member: ZipMember) -> Iterator[bytes]:
    """One member's uncompressed bytes as a stream, a megabyte at a time; never more than it declared.

    Raises ValueError when the member is not stored or deflated, its data runs past the archive, or it
    inflates to more than it declared (the directory lied: a bomb in disguise).
    """
    header = archive.read_range(member.header_offset, _LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != b"PK\x03\x04":
        raise ValueError("bad local header")
    name_len, extra_len = _LOCAL_HEADER.unpack(header)[1:]
    start = member.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    end = start + member.compressed_size
    if end > archive.size:
        raise ValueError("member data runs past the archive")
    if member.method not in (_STORED, _DEFLATED):
        raise ValueError("unsupported compression method")
    try:
        yield from _inflate(archive, member, start, end)
    except zlib.error as err:
        raise ValueError("corrupt deflate stream") from err


def _inflate(archive: ByteSource, member: ZipMember, start: int, end: int) -> Iterator[bytes]:
    inflater = zlib.decompressobj(-zlib.MAX_WBITS) if member.method == _DEFLATED else None
    produced = 0
    for offset in range(start, end, _CHUNK):
        data = archive.read_range(offset, min(_CHUNK, end - offset))
        while data:
            if inflater is None:
                out, data = data, b""
            else:
                out = inflater.decompress(data, _CHUNK)
                data = inflater.unconsumed_tail
            produced += len(out)
            if produced > member.uncompressed_size:
                raise ValueError("member inflates past its declared size")
            if out:
                yield out
    rest = inflater.flush() if inflater is not None else b""
    if produced + len(rest) > member.uncompressed_size:
        raise ValueError("member inflates past its declared size")
    if rest:
        yield rest
