"""Is this file text? read refuses binary files instead of handing the model a page of replacement characters.

Upstream decodes everything as UTF-8 with U+FFFD for bad bytes; that stays true for text with some stray
bytes (Latin-1 accents in a file read as UTF-8). A file is called binary when it starts with a known binary
signature, has a NUL byte near the start (git's rule; UTF-16/32 text is named as such), when more than 2% of
it are control characters text does not use, or when more than 30% of it is not UTF-8 at all.
"""

from __future__ import annotations

import codecs
import re

SNIFF_BYTES = 8192  # the NUL rule looks this far (as git does); the ratios look at what they are given
# Random bytes hold about 10% such controls and over half non-UTF-8 bytes. Latin-1 prose in a UTF-8 reader
# stays well under the second bound (German about 5%, French less) and keeps being read, as upstream does.
CONTROL_RATIO = 0.02
INVALID_RATIO = 0.30
# (offset, signature, what it is): formats that read would otherwise turn into mojibake
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"%PDF-", "PDF document"),
    (0, b"PK\x03\x04", "ZIP archive (also .docx, .xlsx, .jar, .whl…)"),
    (0, b"PK\x05\x06", "ZIP archive (empty)"),
    (0, b"\x1f\x8b", "gzip-compressed data"),
    (0, b"BZh", "bzip2-compressed data"),
    (0, b"\xfd7zXZ\x00", "xz-compressed data"),
    (0, b"\x28\xb5\x2f\xfd", "Zstandard-compressed data"),
    (0, b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (0, b"Rar!\x1a\x07", "RAR archive"),
    (257, b"ustar", "tar archive"),
    (0, b"\x7fELF", "ELF executable or library"),
    (0, b"MZ", "Windows executable (PE/DOS)"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"\xca\xfe\xba\xbe", "Java class file or Mach-O universal binary"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"PAR1", "Parquet file"),
    (0, b"\x89HDF\r\n\x1a\n", "HDF5 file"),
    (0, b"\x93NUMPY", "NumPy array file"),
    (0, b"\x80\x04\x95", "Python pickle"),
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF8", "GIF image"),
    (0, b"ID3", "MP3 audio"),
    (0, b"OggS", "Ogg media"),
    (0, b"fLaC", "FLAC audio"),
    (0, b"RIFF", "RIFF media (WAV, AVI, WebP…)"),
    (4, b"ftyp", "ISO media (MP4, MOV, HEIC, AVIF…)"),
    (0, b"\x1a\x45\xdf\xa3", "Matroska/WebM media"),
    (0, b"wOFF", "WOFF font"),
    (0, b"wOF2", "WOFF2 font"),
    (0, b"OTTO", "OpenType font"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "OLE2 document (old .doc, .xls, .msi…)"),
)
# Signatures that decide alone: non-ASCII bytes no text file starts with, and PDF (mostly ASCII, never
# useful as text). The others are printable ("MZ", "RIFF", "ID3"…) and could start a sentence, so they
# only name the kind of a file whose bytes already look binary.
_DECISIVE = frozenset(
    what for _, sig, what in _SIGNATURES if sig == b"%PDF-" or any(b >= 0x80 or b < 0x20 for b in sig)
)
_BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xfe\x00\x00", "UTF-32 text"),
    (b"\x00\x00\xfe\xff", "UTF-32 text"),
    (b"\xff\xfe", "UTF-16 text"),
    (b"\xfe\xff", "UTF-16 text"),
)
_UNDECODABLE = re.compile(r"[\udc80-\udcff]")  # bytes that are not UTF-8, as surrogateescape decodes them
_CONTROL = re.compile(r"[\x01-\x08\x0e-\x1a\x1c-\x1f]")  # C0 controls text does not use (\t \n \f \r ESC are fine)


def binary_kind(data: bytes) -> str | None:
    """What binary kind `data` (a file's start, or all of it) looks like, or None when it reads as text."""
    for bom, what in _BOMS:
        if data.startswith(bom):
            return what
    signature = _signature(data)
    if signature is not None and (signature in _DECISIVE or _looks_binary(data)):
        return signature
    if b"\x00" in data[:SNIFF_BYTES]:
        return "binary data (NUL bytes)"
    invalid, controls = _counts(data)
    if controls > CONTROL_RATIO * len(data):
        return "binary data (control bytes)"
    if invalid > INVALID_RATIO * len(data):
        return "text in an encoding other than UTF-8, or binary data"
    return None


def _signature(data: bytes) -> str | None:
    for offset, signature, what in _SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            return what
    return None


def _counts(data: bytes) -> tuple[int, int]:
    """(bytes that are not UTF-8, C0 control characters text does not use)."""
    # final=False: a multi-byte character cut at the end of a prefix is not counted as an error
    text = codecs.getincrementaldecoder("utf-8")("surrogateescape").decode(data, final=False)
    return len(_UNDECODABLE.findall(text)), len(_CONTROL.findall(text))


def _looks_binary(data: bytes) -> bool:
    if b"\x00" in data[:SNIFF_BYTES]:
        return True
    invalid, controls = _counts(data)
    return controls > CONTROL_RATIO * len(data) or invalid > INVALID_RATIO * len(data)


def inspect_hint(path: str) -> str:
    return (
        f"If exec is enabled and these commands are allowed, look at it there: `file {path}`, "
        f"`xxd {path} | head`, `strings {path} | head`, or a converter for its format (pdftotext, unzip -l, "
        f"iconv -f <encoding> -t UTF-8); write what you need to a text file and read that."
    )
