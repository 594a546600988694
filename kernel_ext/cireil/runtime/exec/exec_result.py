"""The result dict of one exec call (reference §4.12, with the spec's fallbackInline and previews)."""

from __future__ import annotations

from typing import Any

from .capture import STREAMS, Capture
from .preview import excerpt
from .process import Outcome


def build_result(capture: Capture, outcome: Outcome, timeout_ms: int, warning: str | None) -> dict[str, Any]:
    config = capture.config
    out: dict[str, Any] = {
        "exitCode": outcome.exit_code,
        "stdoutLength": capture.streams["stdout"].size,
        "stderrLength": capture.streams["stderr"].size,
        "success": outcome.exit_code == 0 and not outcome.timed_out,
    }
    if outcome.timed_out:
        out["timedOut"] = True
        out["error"] = f"Command timed out after {timeout_ms}ms"
    if warning:
        out["warning"] = warning
    if capture.inline:
        out.update(inline=True, stdout=capture.inline_text("stdout"), stderr=capture.inline_text("stderr"))
        out["truncated"] = False
    elif capture.fallback:
        truncated = False
        for name in STREAMS:
            part = excerpt(capture.streams[name].window, config.maxPreviewLineLength, None)
            out[name] = part.text
            truncated |= part.truncated
        out.update(fallbackInline=True, truncated=truncated)
    else:
        out["truncated"] = True
        if capture.capped:
            out["outputCapped"] = True
            out["note"] = (
                f"Output over maxOutputBytes ({config.maxOutputBytes} bytes per call) was not saved: the files "
                "hold only the start of it. stdoutLength/stderrLength are the full sizes and the previews end "
                "with the real end of the output."
            )
        for name in STREAMS:
            stream = capture.streams[name]
            if not stream.size:
                continue
            if stream.path is not None:  # none when the cap was reached before this stream wrote anything
                out[f"{name}Path"] = stream.path
            part = excerpt(stream.window, config.maxPreviewLineLength, f"{name}Path")
            if part.truncated:  # more lines than head + tail, or a line cut: the text alone would not show it
                out[f"{name}Preview"] = part.text
    return dict(sorted(out.items()))
