"""One gzip or deflate layer of an HTTP body, inflated in bounded pieces (model replies and MCP answers alike).

zlib's `max_length` keeps every piece at most `size` bytes, so a cap on the decoded size holds within one piece
whatever the compression ratio: a gzip bomb is stopped after a piece, not after it has filled memory.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator


class CorruptData(ValueError):
    """The compressed data cannot be inflated; `detail` is zlib's own word for why."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"its {kind} data is corrupt ({detail})")
        self.kind = kind
        self.detail = detail


class Inflate:
    """Feed it the body as it arrives; it gives back the inflated bytes in pieces of at most `size`."""

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "gzip" or "deflate"
        self._raw_deflate = False
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 16 if kind == "gzip" else zlib.MAX_WBITS)
        self._started = False

    @property
    def eof(self) -> bool:
        """The compressed stream has ended (a body that stops before this is cut short)."""
        return self._z.eof

    def feed(self, data: bytes, size: int) -> Iterator[bytes]:
        while not self._z.eof:
            try:
                out = self._z.decompress(data, size)
            except zlib.error as exc:
                if self.kind == "deflate" and not self._started and not self._raw_deflate:
                    # "deflate" is often sent without its zlib header (as browsers and httpx accept)
                    self._raw_deflate = True
                    self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                    continue
                raise CorruptData(self.kind, str(exc)) from None
            self._started = True
            data = self._z.unconsumed_tail
            if out:
                yield out
            if not data and len(out) < size:
                return  # zlib stopped for want of input, not of room
        # after the end of the compressed stream: trailing bytes are ignored, as httpx does
