"""Choosing the protocol era at connect: 2026-07-28 when the server answers its probe, else the handshake.

Only an answer that shows a legacy server falls back: an HTTP 400/404/405 or a method-not-found that is
not one of the modern errors, or a discover result without 2026-07-28. Anything else (a redirect, a 500,
a refused token, a modern server rejecting our headers) is the server's real answer and fails the connect,
so a broken modern server is not misreported as a legacy one.
"""

from __future__ import annotations

from typing import Any

from .errors import McpError, McpHttpError, McpRemoteError
from .transport import MODERN, VERSIONS, Transport

HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION = -32020, -32021, -32022
METHOD_NOT_FOUND = -32601
_LEGACY_STATUS = (400, 404, 405)


async def open_connection(transport: Transport, *, probe: bool = True) -> dict:
    """The server's discover or initialize result; `transport` is left speaking the chosen revision."""
    if probe:
        try:
            result = await transport.discover()
        except McpError as exc:
            if not _legacy_answer(exc):
                raise
        else:
            versions = result.get("supportedVersions")
            if isinstance(versions, list) and MODERN in versions:
                transport.adopt_modern(result)
                return result
    return await transport.initialize()


def _legacy_answer(exc: McpError) -> bool:
    """Whether the probe's failure shows a server that only knows the handshake; raises if it shows neither era."""
    code = getattr(exc, "code", None)
    if code == UNSUPPORTED_VERSION:
        supported = _supported(getattr(exc, "data", None))
        if any(v in VERSIONS for v in supported):
            return True
        raise McpError(
            f"server speaks protocol versions {', '.join(supported) or '(none listed)'}; this client speaks "
            f"{MODERN}, {', '.join(VERSIONS)}"
        ) from None
    if code in (HEADER_MISMATCH, MISSING_CAPABILITY):
        return False  # a modern server refusing what we sent: its message says why
    if isinstance(exc, McpHttpError):
        return exc.status in _LEGACY_STATUS
    return isinstance(exc, McpRemoteError) and code == METHOD_NOT_FOUND


def _supported(data: Any) -> list[str]:
    versions = data.get("supported") if isinstance(data, dict) else None
    return [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []
