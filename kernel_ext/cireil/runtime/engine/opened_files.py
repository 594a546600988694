"""What the agent sees of its opened files: the user message of reference §7.2, rebuilt per model call.

Files are resolved with mounts (the upstream code did not), sections render from the same outline
read showed the agent, and a pinned id the outline no longer has says so instead of vanishing.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field

from ..base.errors import ToolError
from ..files import safefs
from ..files.paths import SandboxPaths
from ..files.textfile import READ_LIMIT, read_text
from ..outline import build_outline, find_section, section_text
from ..sessions.state import Session

OPENED_TOTAL_LIMIT = 4 * READ_LIMIT  # characters of all opened files together, sent with every model call


def not_found_text(section_id: str) -> str:
    return (
        f'[Section "{section_id}" not found. The file changed since its outline was made, so the outline is '
        "stale: read the file again and pin sections by their current ids.]"
    )


@dataclass
class OpenedFilesContext:
    """The opened-files message (empty when nothing is open) and the notes a model call would queue."""

    text: str
    files: list[dict] = field(default_factory=list)  # {path, size, sections|None, missing: [ids]}
    notes: list[str] = field(default_factory=list)  # files auto-closed because they are gone
    tools: str = ""  # the session's tool grant in words (Agent.context fills it in)

    def __str__(self) -> str:  # in IPython it is shown by kernel/display.py's printer
        return self.text


def _render_file(path: str, size: int, text: str, sections: list[str]) -> tuple[str, list[str]]:
    if not sections:
        return f'<file path="{path}" size="{size}">\n{text}\n</file>', []
    outline = build_outline(path, text, force=True)  # a file that shrank still renders its sections
    parts = [f'<file path="{path}" size="{size}" sections="{", ".join(sections)}">']
    missing: list[str] = []
    for section_id in sections:
        section = find_section(outline, section_id)
        if section is None:
            missing.append(section_id)
            body = not_found_text(section_id)
        else:
            body = section_text(text, section)
        parts.append(f'<section id="{section_id}">\n{body}\n</section>\n')
    parts.append("</file>")
    return "\n".join(parts), missing


def opened_files_context(session: Session, paths: SandboxPaths, *, close_missing: bool = False) -> OpenedFilesContext:
    """Render the opened files; `close_missing` also closes the ones that are gone, as a model call does."""
    blocks: list[str] = []
    files: list[dict] = []
    notes: list[str] = []
    shown = 0
    for path in list(session.opened_files):
        note = f"File {path} moved/deleted while still open. Automatically closed."
        try:
            resolved = paths.resolve(path)
            info = safefs.stat_entry(resolved.target)
            ok = info is not None and stat.S_ISREG(info.st_mode)
        except ToolError as exc:
            ok = False
            if "not accessible in the current context" in exc.message:  # conditions.toml, for this session
                note = f"File {path} is not accessible in the current context. Automatically closed."
        except OSError:
            ok = False
        if not ok:
            notes.append(note)
            if close_missing:
                session.opened_files.remove(path)
                session.active_sections.pop(path, None)
            continue
        sections = list(session.active_sections.get(path, ()))
        assert info is not None
        if info.st_size > READ_LIMIT:  # grew past the limit after it was opened: never sent whole
            note = (
                f"File {path} is now {info.st_size} bytes, over the {READ_LIMIT}-byte limit: its content is left "
                "out of the context until it shrinks or is closed."
            )
            blocks.append(f'<file path="{path}" size="{info.st_size}">\n[{note}]\n</file>')
            files.append({"path": path, "size": info.st_size, "sections": sections or None, "missing": []})
            continue
        try:
            text = read_text(resolved)
        except ToolError as exc:  # swapped for something else, or grew, since the stat: say so, not fail the turn
            notes.append(f"File {path} could not be read: {exc.message}")
            continue
        block, missing = _render_file(path, info.st_size, text, sections)
        if shown + len(block) > OPENED_TOTAL_LIMIT:  # many pinned files: each fits, together they would not
            block = (
                f'<file path="{path}" size="{info.st_size}">\n[Not shown: the files before it already take {shown} '
                f"characters of the {OPENED_TOTAL_LIMIT} all opened files may use. Close files you no longer "
                "need, or pin sections instead of whole files.]\n</file>"
            )
        shown += len(block)
        blocks.append(block)
        files.append({"path": path, "size": info.st_size, "sections": sections or None, "missing": missing})
    if not blocks:
        return OpenedFilesContext("", files, notes)
    text = "<opened_files>\nThese are your currently open files:\n\n" + "\n\n".join(blocks) + "\n\n</opened_files>"
    return OpenedFilesContext(text, files, notes)
