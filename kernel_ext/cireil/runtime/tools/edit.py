"""edit: targeted replacements in a file, forgiving about whitespace and never about content (reference §4.10).

A dry run stores its result and returns an applyId; applying it writes exactly what was previewed,
provided the complete file (frontmatter included) is still what the preview saw.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..base.errors import ToolError
from ..base.params import AnyOf, Array, Boolean, Number, Object, Params, String
from ..edit.blocks import parse_cell
from ..files import frontmatter
from ..files.atomic import write_sandbox_file
from ..files.paths import ResolvedPath
from ..files.textfile import read_bytes
from ..toolkit.tool import Tool, ToolContext

if TYPE_CHECKING:
    from ..edit.previews import Preview

T = TypeVar("T")

_ENCODING = "utf-8"
_ERRORS = "surrogateescape"  # bytes that are not UTF-8 pass through untouched instead of being mangled


def _near_object() -> Object:
    return Object(
        properties={
            "direction": String(
                enum=("before", "after"),
                required=False,
                description="Search only before or after the matched landmark. Default searches around the landmark.",
            ),
            "endLine": Number(
                required=False, description="End of an explicit 1-indexed line-range window. Use with startLine."
            ),
            "index": Number(
                required=False,
                description="1-indexed occurrence of the symbol to target (e.g. 2 for the second match).",
            ),
            "line": Number(
                required=False,
                description=(
                    "Expected 1-indexed line of the symbol. The nearest occurrence within radius lines is used."
                ),
            ),
            "radius": Number(required=False, description="Number of lines around the landmark to search. Default: 15."),
            "startLine": Number(
                required=False, description="Start of an explicit 1-indexed line-range window. Use with endLine."
            ),
            "symbol": String(
                required=False,
                description=(
                    "Symbol/landmark text to find. Fuzzy-matched like oldText. Use with line, index, direction, or "
                    "radius to disambiguate."
                ),
            ),
        }
    )


# text near the edit, a {symbol, line, index, direction, radius} or {startLine, endLine} window, or a list of
# these (intersected)
NEAR = AnyOf(
    options=(String(), _near_object(), Array(items=AnyOf(options=(String(), _near_object())))),
    required=False,
)

EDIT = Object(
    properties={
        "all": Boolean(required=False, description="Replace all occurrences of oldText. Default: false."),
        "near": NEAR,
        "newText": String(
            description=(
                "Replacement text. Pass an empty string to delete oldText. Standard JSON escape sequences are "
                "supported: \\n for newlines, \\t for tabs, \\\\ for a literal backslash, etc."
            )
        ),
        "oldText": String(
            description=(
                "Text to find. Fuzzy whitespace matching is used by default: differences in indentation, trailing "
                "spaces, tabs vs spaces, and intra-line spacing are forgiven. Newlines still matter as logical line "
                "separators. Standard JSON escape sequences are supported: \\n for newlines, \\t for tabs, "
                "\\\\ for a literal backslash, etc."
            )
        ),
    }
)


def _legacy(args: Any) -> Any:
    """The str-replace form `old_text`/`new_text` becomes one edit (the 2.0.0 migration path)."""
    if not isinstance(args, dict) or "apply" in args or args.get("edits"):
        return args
    old, new = args.get("old_text"), args.get("new_text")
    if not (isinstance(old, str) and isinstance(new, str)):
        return args
    edit: dict[str, Any] = {"oldText": old, "newText": new}
    for key in ("near", "all"):
        if key in args:
            edit[key] = args[key]
    rest = {k: v for k, v in args.items() if k not in ("old_text", "new_text", "near", "all", "edits")}
    return {**rest, "edits": [edit]}


def _split(resolved: ResolvedPath, text: str) -> tuple[str, str, frontmatter.FrontmatterKind | None]:
    kind = frontmatter.kind_for(resolved.sandbox)
    parts = frontmatter.split(text, kind) if kind else None
    if kind is None or parts is None:
        return "", text, None
    return parts[0], parts[1], kind


def _check_frontmatter(front: str, kind: frontmatter.FrontmatterKind | None) -> None:
    if kind is None:
        return
    try:
        frontmatter.parse(front, kind)
    except frontmatter.FrontmatterError as exc:
        raise ToolError(f"Invalid frontmatter: {exc}") from None


def _read(resolved: ResolvedPath, path: str) -> bytes:
    try:
        return read_bytes(resolved)  # opened without following a symlink planted since resolve
    except ToolError as exc:
        if exc.message.startswith("EISDIR"):
            raise ToolError(f"'{path}' is a directory.", hint="Give the path of a file inside it.") from None
        if exc.message.startswith("ENOENT"):
            raise ToolError(f"File at {path} does not exist.", hint="Use write to create a new file.") from None
        raise


class _FileLock:
    """Edits run on a worker thread (so a big file never stalls the runtime loop); two edits of one
    file still go one after the other, read to write, as they did on the loop."""

    def __init__(self) -> None:
        self.lock = threading.Lock()


_locks: weakref.WeakValueDictionary[str, _FileLock] = weakref.WeakValueDictionary()
_locks_guard = threading.Lock()


def _lock_for(host: str) -> _FileLock:
    with _locks_guard:
        lock = _locks.get(host)
        if lock is None:
            lock = _locks[host] = _FileLock()
        return lock


async def _off_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a worker thread. Interrupted, it still waits for the thread to finish, so an
    interrupted edit has happened whole or not at all by the time the interrupt is reported."""
    work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        while not work.done():  # a second interrupt must not cut this wait short either
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({work})
        if not work.cancelled():
            work.exception()  # retrieved: a refusal after the interrupt is not worth a warning
        raise


async def run(args: dict, ctx: ToolContext) -> dict:
    path: str = args["path"]
    resolved = ctx.paths.resolve_for_write(path)
    from ..edit.previews import Preview, store_for  # on the first edit, not at agent load

    store = store_for(ctx.extra.setdefault("tool_state", {}))
    if args.get("apply") is not None:
        preview = _preview(args["apply"], resolved, ctx)
        content = await _off_loop(_apply, preview, resolved, _lock_for(str(resolved.host)))
        ctx.session.forget_sections(resolved.sandbox)
        count = len(preview.result["edits"])
        return {
            "content": content,
            "detail": f"Successfully applied dry-run {args['apply']}: replaced {count} block(s) in {path}.",
            **preview.result,
            "success": True,
        }
    edits = args.get("edits") or []
    if not edits:
        raise ToolError(
            "No edits provided.",
            hint='Give "edits": [{"oldText": ..., "newText": ...}], or "apply" with the applyId of a dry run.',
        )
    dry = bool(args.get("dryRun"))
    original, new_content, shared, count = await _off_loop(
        _edit, edits, path, resolved, None if dry else _lock_for(str(resolved.host))
    )
    if dry:
        apply_id = store.add(Preview(resolved.sandbox, str(resolved.host), original, new_content, shared))
        detail = f"Dry-run: would replace {count} block(s) in {path}. Apply with applyId: {apply_id}"
        return {"applyId": apply_id, "detail": detail, **shared, "success": True}
    ctx.session.forget_sections(resolved.sandbox)
    return {"detail": f"Successfully replaced {count} block(s) in {path}.", **shared, "success": True}


def _edit(edits: list, path: str, resolved: ResolvedPath, lock: _FileLock | None) -> tuple[bytes, bytes, dict, int]:
    """Read, match, build the views and (given the file's lock, i.e. not a dry run) write; on a worker thread."""
    from ..edit import Change, apply_edits  # the matcher and difflib load on the first edit, not at agent load

    with lock.lock if lock is not None else contextlib.nullcontext():
        original = _read(resolved, path)
        text = original.decode(_ENCODING, _ERRORS)
        front, body, kind = _split(resolved, text)
        _check_frontmatter(front, kind)
        outcome = apply_edits(body, edits, path)
        known = outcome.metadata[0]["startLine"] - 1 if outcome.metadata else None  # counted by the matcher
        change = Change(body, outcome.new_text, outcome.spans(), first_line=known)
        diff, first = change.numbered()
        shared = {
            "diff": diff,
            "edits": outcome.metadata,
            "firstChangedLine": first,
            "patch": change.unified(resolved.sandbox),
        }
        new_content = outcome.new_bytes(original, front, _ENCODING, _ERRORS)
        if lock is not None:
            write_sandbox_file(resolved, new_content, path)
    return original, new_content, shared, len(outcome.sites)


def _preview(apply_id: str, resolved: ResolvedPath, ctx: ToolContext) -> Preview:
    from ..edit.previews import store_for

    preview = store_for(ctx.extra.setdefault("tool_state", {})).get(apply_id)
    if preview is None:
        raise ToolError(f"No dry-run found for applyId: {apply_id}. Run a dry-run first.")
    if preview.host_path != str(resolved.host):
        raise ToolError(
            f"apply path mismatch: dry-run was for {preview.sandbox_path}, but apply targets a different path."
        )
    return preview


def _apply(preview: Preview, resolved: ResolvedPath, lock: _FileLock) -> str:
    """Write the preview if the file is still what it saw, and give its text; on a worker thread."""
    with lock.lock:
        try:
            current: bytes | None = read_bytes(resolved)
        except ToolError as exc:
            if exc.message.startswith("Access denied"):
                raise
            current = None
        if current != preview.original:
            raise ToolError(
                "File content has changed since the dry-run. Run a new dry-run and apply with the updated applyId."
            )
        write_sandbox_file(resolved, preview.new_content, resolved.sandbox)
    return preview.new_content.decode(_ENCODING, "replace")


TOOL = Tool(
    name="edit",
    path_effect="changes",
    description=(
        "Performs string replacements in an existing file with fuzzy whitespace matching.\n\n"
        "Whitespace in `oldText` and `near` is matched fuzzily: differences in indentation, trailing spaces, "
        "tabs vs spaces, or intra-line spacing are forgiven. Newlines still matter as logical line "
        "separators.\n\n"
        "For files under /blocks/ and /skills/, search happens within the body only — the required "
        "frontmatter is transparently preserved and never matched or modified.\n\n"
        "Parameters:\n"
        "- `edits` (required, unless using `apply`): array of { oldText, newText, near?, all? }\n"
        "- `path` (required): sandbox path of the file to edit.\n"
        "- `dryRun` (optional): preview changes without writing. Returns applyId for later use.\n"
        "- `apply` (optional): apply a previous dry-run by its applyId.\n\n"
        "When changing multiple separate locations, use multiple entries in `edits[]` instead of separate "
        "tool calls. Each edit is matched against the original file, not incrementally.\n\n"
        "Tips:\n"
        "- Use `read` first to see current file contents.\n"
        "- Prefer short `oldText` with `near` for disambiguation over copying large blocks of exact "
        "whitespace.\n"
        "- If `oldText` appears multiple times, either set `all: true` or add `near` to target a specific "
        "one.\n"
        "- Use structured `near` objects (symbol + line, startLine/endLine, index) with code_index_symbols "
        "for precise targeting.\n"
        "- Use `dryRun: true` to preview a diff before it is written to disk.\n\n"
        "When NOT to use:\n"
        "- Creating new files or rewriting an entire file — use `write` instead.\n"
        "- The file doesn't exist yet — use `write` instead.\n\n"
        "Note that paths used here *must* be absolute."
    ),
    params=Params(
        apply=String(
            required=False,
            description=(
                "Apply a previously computed dry-run by its applyId. The file must not have changed since the "
                "dry-run. When set, 'edits' must not be provided."
            ),
        ),
        dryRun=Boolean(
            required=False,
            description=(
                "If true, compute the diff/patch and metadata without writing to disk. Useful for previewing changes."
            ),
        ),
        edits=Array(
            items=EDIT,
            required=False,
            description=(
                "One or more targeted replacements. Each edit is matched against the original file, not "
                "incrementally. Do not emit overlapping or nested edits. If two changes touch the same block or "
                "nearby lines, merge them into one edit instead. Required unless 'apply' is used."
            ),
        ),
        path=String(min_length=1, description="Sandbox path of the file to edit (e.g. /workspace/main.ts)."),
    ),
    run=run,
    main_arg="path",
    prepare=_legacy,
    parse_body=parse_cell,
)
