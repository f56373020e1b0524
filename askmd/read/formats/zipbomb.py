"""A .docx is a zip: before python-docx reads one, refuse what is not a zip, or would
unzip to far more than it weighs (a zip bomb), or whose members are not the size their
headers say."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

from askmd.read.unreadable import Unreadable

DOCX_MAX_UNZIPPED = 256 * 1024 * 1024  # bounded decompression: a zip bomb stops here
DOCX_MAX_RATIO = 200  # a real document.xml compresses ~10x; a bomb, thousands of times


def check_zip(path: Path) -> None:
    """Refuse a .docx that is not a zip, or would unzip to far more than it weighs.

    The declared sizes are what Python's zipfile decompresses to at most, and python-docx
    reads through it: checking them before python-docx reads anything bounds the memory a
    zip bomb can take, once `_inflate_counted` has shown each member really is the size
    its header says (zipfile inflates a member whole before checking that).
    """
    if not zipfile.is_zipfile(path):
        raise Unreadable("not a Word .docx file (it is not a zip archive)")
    with zipfile.ZipFile(path) as z:
        infos = z.infolist()
        total = sum(i.file_size for i in infos)
        worst = max((i.file_size / max(i.compress_size, 1) for i in infos), default=0)
        if total > DOCX_MAX_UNZIPPED or (total > 1048576 and worst > DOCX_MAX_RATIO):
            raise Unreadable(f"a zip bomb? (it would unzip to {total / 1048576:.0f} MB)")
        if "word/document.xml" not in {i.filename for i in infos}:
            raise Unreadable("not a Word .docx file (no word/document.xml inside)")
        with path.open("rb") as raw:
            for info in infos:
                _inflate_counted(raw, info)


ZIP_READ = 64 * 1024


def _inflate_counted(raw, info: zipfile.ZipInfo) -> None:
    """Inflate one member a block at a time, counting what comes out, and refuse it the
    moment it is larger than its header says (or ends up smaller): nothing more than one
    block past the declared size is ever produced."""
    said = info.file_size
    lying = Unreadable(
        f"a damaged or hostile zip ({info.filename} does not unzip to the {said} bytes "
        "its header says)"
    )
    if info.flag_bits & 1:
        raise Unreadable(f"an encrypted zip ({info.filename})")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise Unreadable(f"not a Word .docx file ({info.filename} is compressed unusually)")
    raw.seek(info.header_offset)
    header = raw.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        raise lying
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    raw.seek(info.header_offset + 30 + name_length + extra_length)
    left = info.compress_size
    inflate = zlib.decompressobj(-15) if info.compress_type == zipfile.ZIP_DEFLATED else None
    out = 0
    while left > 0 and not (inflate and inflate.eof):
        block = raw.read(min(ZIP_READ, left))
        if not block:
            raise lying
        left -= len(block)
        while block:
            if inflate is None:
                out, block = out + len(block), b""
            else:
                out += len(inflate.decompress(block, ZIP_READ))
                block = inflate.unconsumed_tail
            if out > said:
                raise lying
    if inflate is not None:
        out += len(inflate.flush())
    if out != said:
        raise lying
