"""A provider's reply body, decoded in bounded pieces and counted as it is decoded.

httpx decodes gzip and deflate with one unbounded `decompress` per network read: a 64 KB read of a gzip
bomb becomes some 64 MB at once, before any caller could count it. Here the body is read raw (as it came
off the wire, transfer encoding removed) and inflated with zlib's `max_length`, so no piece is larger than
PIECE bytes and a cap on the decoded size holds within one piece, whatever the compression ratio.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx

from ..base.inflate import CorruptData, Inflate

PIECE = 64 * 1024
MAX_LAYERS = 2  # Content-Encoding "gzip, gzip" is legal; a longer chain is no server's honest answer
ACCEPT_ENCODING = "gzip, deflate"  # what the decoder below reads; sent with every request so no other comes


class BodyTooLarge(Exception):
    """The decoded body passed its cap (`read` bytes when it stopped)."""

    def __init__(self, read: int) -> None:
        super().__init__(f"more than {read} bytes")
        self.read = read


class BadEncoding(Exception):
    """The body's Content-Encoding is not one this reader decodes, or its compressed data is corrupt."""


def layers(content_encoding: str) -> list[Inflate]:
    """The decoders of a Content-Encoding header, in the order they apply (the reverse of the header's)."""
    names = [n.strip().lower() for n in content_encoding.split(",") if n.strip()]
    names = [n for n in names if n != "identity"]
    if len(names) > MAX_LAYERS:
        raise BadEncoding(f"Content-Encoding {content_encoding[:100]!r} has more than {MAX_LAYERS} layers")
    out = []
    for name in reversed(names):
        if name in ("gzip", "x-gzip"):
            out.append(Inflate("gzip"))
        elif name == "deflate":
            out.append(Inflate("deflate"))
        else:
            raise BadEncoding(f"Content-Encoding {name[:40]!r} is not one cireil asked for ({ACCEPT_ENCODING})")
    return out


def _through(stages: list[Inflate], data: bytes) -> Iterator[bytes]:
    if not stages:
        yield data
        return
    try:
        for piece in stages[0].feed(data, PIECE):
            yield from _through(stages[1:], piece)
    except CorruptData as exc:
        raise BadEncoding(str(exc)) from None


async def decoded_pieces(response: httpx.Response, cap: int) -> AsyncIterator[bytes]:
    """The body's decoded bytes in pieces of at most PIECE bytes (a raw piece of an unencoded body may be
    larger: it is already in memory); BodyTooLarge as soon as more than `cap` bytes were decoded."""
    stages = layers(response.headers.get("content-encoding", ""))
    total = 0
    async for raw in response.aiter_raw():
        for piece in _through(stages, raw):
            total += len(piece)
            if total > cap:
                room = cap - (total - len(piece))
                if room > 0:
                    yield piece[:room]  # the bytes up to the cap: what an excerpt shows
                raise BodyTooLarge(total)
            yield piece


async def read_capped(response: httpx.Response, cap: int) -> bytes:
    """The whole decoded body; BodyTooLarge past `cap` bytes."""
    out = bytearray()
    async for piece in decoded_pieces(response, cap):
        out += piece
    return bytes(out)


async def read_excerpt(response: httpx.Response, cap: int) -> tuple[bytes, bool]:
    """At most the first `cap` decoded bytes and whether the body went on: an error body is only quoted,
    so the rest is never read (leaving the block closes the connection)."""
    out = bytearray()
    try:
        async for piece in decoded_pieces(response, cap):
            out += piece
    except BodyTooLarge:
        return bytes(out), True
    return bytes(out), False
