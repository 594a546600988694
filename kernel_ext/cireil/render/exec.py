"""exec: the command, its exit code, duration and byte counts, then its output or previews and files.

Also the live view shown while a command runs (`live_bundle`), replaced by the final panel when done.
Spill files get an action each that opens them through `read`.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from . import Action
from .html import BG_SOFT, ERROR, FG_DIM, INFO_ICON, MONO, OK, WARN, code, esc, frame
from .safe import safe_bundle

if TYPE_CHECKING:
    from ..runtime.toolkit.result import ToolResult

SHOWS_FAILURES = True  # a non-zero exit is a failure, but its output is what a person needs to see
_STREAMS = ("stdout", "stderr")


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_")
_DOUBLE_SAFE = frozenset('"$`\\!')


def _word(word: str) -> str:
    """A word as a person would type it: bare when it can be, in double quotes when it holds single quotes
    (`print('started')` stays readable, not shlex's '"'"' dance), shlex quoting otherwise."""
    if word and set(word) <= _PLAIN:
        return word
    if "'" in word and not set(word) & _DOUBLE_SAFE:
        return f'"{word}"'
    return shlex.quote(word)


def _command_line(args: dict) -> str:
    words = [str(args.get("command", "")), *(str(a) for a in (args.get("args") or []))]
    return "$ " + " ".join(_word(w) for w in words)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024  # type: ignore[assignment]
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
    return f"{n} B"


def _pre(text: str, color: str = "inherit") -> str:
    return (
        f'<pre style="font-family:{MONO};background:{BG_SOFT};color:{color};padding:6px;margin:2px 0 6px 0;'
        f'max-height:24em;overflow:auto;white-space:pre-wrap;overflow-wrap:anywhere">{esc(text)}</pre>'
    )


def _label(text: str) -> str:
    return f'<div style="color:{FG_DIM};font-size:90%;margin-top:4px">{text}</div>'


def _summary(data: dict, duration_s: float) -> str:
    code = data.get("exitCode")
    state = "timed out" if data.get("timedOut") else f"exit {code}"
    return (
        f"{state} · {duration_s:.2f} s · stdout {_size(data.get('stdoutLength', 0))}"
        f" · stderr {_size(data.get('stderrLength', 0))}"
    )


def render(result: ToolResult) -> tuple[str, str]:
    data = result.data
    if "exitCode" not in data:  # refused before running (validation, allowlist, .env): the error view
        from .error import render as error_view

        return error_view(result)
    command = _command_line(result.args)
    summary = _summary(data, result.duration_s)
    ok = data.get("success") is not False
    text = [command, summary]
    body = ""
    if data.get("warning"):
        text.append(f"warning: {data['warning']}")
        body += f'<div style="color:{WARN};font-weight:600;margin:2px 0">⚠ {esc(data["warning"])}</div>'
    if data.get("error"):
        text.append(f"error: {data['error']}")
        body += f'<div style="color:{ERROR};margin:2px 0">✖ {esc(data["error"])}</div>'
    if data.get("fallbackInline"):
        note = "the output could not be saved to files; showing a bounded excerpt" + (
            " (content omitted, not recoverable)" if data.get("truncated") else ""
        )
        text.append(f"note: {note}")
        body += f'<div style="color:{WARN};margin:2px 0">{INFO_ICON} {esc(note)}</div>'
    for name in _STREAMS:
        color = ERROR if name == "stderr" else "inherit"
        if f"{name}Path" in data:
            path = data[f"{name}Path"]
            size = _size(data.get(f"{name}Length", 0))
            preview = data.get(f"{name}Preview")
            text.append(f"{name}: {size} saved to {path}")
            body += _label(f"{name} · {esc(size)} saved to {code(path)}")
            if preview:
                text.append(preview)
                body += _pre(preview, color)
        elif data.get(name):
            text += [f"{name}:", data[name]]
            body += _label(esc(name)) + _pre(data[name], color)
    if not any(data.get(n) or f"{n}Path" in data for n in _STREAMS):
        text.append("(no output)")
        body += _label("(no output)")
    mark = f'<span style="color:{OK}">✓</span>' if ok else f'<span style="color:{ERROR}">✖</span>'
    title = f'{mark} {code(command)} <span style="color:{FG_DIM};font-weight:normal">· {esc(summary)}</span>'
    return "\n".join(text), frame("exec", body, title=title, failed=not ok)


def actions(result: ToolResult) -> list[Action]:
    """Open each spill file through `read`."""
    return [
        Action(
            label=f"open {name}",
            tool="read",
            args={"path": result.data[f"{name}Path"]},
            tooltip=f"read {result.data[f'{name}Path']}",
            below=True,  # a long file under the panel, in a fold; the exec result stays
        )
        for name in _STREAMS
        if isinstance(result.data.get(f"{name}Path"), str)
    ]


def live_bundle(
    args: dict, tails: dict[str, str], sizes: dict[str, int], elapsed_s: float, *, ended: str | None = None
) -> dict[str, Any]:
    """The view of a command still running: the last lines of each stream and the bytes so far.

    With `ended` ("interrupted", "cancelled") the same panel says how it stopped, keeping the output seen.
    """
    command = _command_line(args)
    state = f"running · {elapsed_s:.1f} s" if ended is None else f"{ended} after {elapsed_s:.1f} s"
    status = f"{state} · stdout {_size(sizes.get('stdout', 0))} · stderr {_size(sizes.get('stderr', 0))}"
    text = [command, status]
    body = ""
    for name in _STREAMS:
        if tails.get(name):
            text += [f"{name} (last lines):", tails[name]]
            body += _label(f"{esc(name)} · last lines") + _pre(tails[name], ERROR if name == "stderr" else "inherit")
    if ended is None and not any(tails.get(n) for n in _STREAMS):
        text.append("(no output yet)")
        body += _label("(no output yet)")
    mark = f'<span style="color:{FG_DIM}">⏳</span>' if ended is None else f'<span style="color:{WARN}">⏹</span>'
    title = f'{mark} {code(command)} <span style="color:{FG_DIM};font-weight:normal">· {esc(status)}</span>'
    return safe_bundle({"text/plain": "\n".join(text), "text/html": frame("exec", body, title=title)})
