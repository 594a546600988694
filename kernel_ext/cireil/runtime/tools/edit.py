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
            "symbol": String(required=False, description="Text whose occurrence marks the place"),
            "line": Number(required=False, description="Line near which the symbol (or the edit) lies"),
            "index": Number(required=False, description="Which occurrence of symbol, 1-based"),
            "direction": String(enum=("before", "after"), required=False, description="Search only before/after"),
            "radius": Number(required=False, description="Lines around the landmark to search (default 15)"),
            "startLine": Number(required=False, description="First line of an explicit window"),
            "endLine": Number(required=False, description="Last line of an explicit window"),
        }
    )


NEAR = AnyOf(
    options=(String(), _near_object(), Array(items=AnyOf(options=(String(), _near_object())))),
    required=False,
    description="Narrow the search: text near the edit, {symbol, line, index, direction, radius}, "
    "{startLine, endLine}, or a list of these (intersected)",
)

EDIT = Object(
    properties={
        "oldText": String(description="Text to replace; whitespace differences are forgiven, content is not"),
        "newText": String(description='Replacement text ("" deletes)'),
        "all": Boolean(required=False, description="Replace every occurrence instead of requiring exactly one"),
        "near": NEAR,
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
        "Replace text in an existing file. Each edit's oldText must occur exactly once (or set all: true); "
        "differences in indentation, tabs vs spaces, trailing spaces, runs of spaces, line endings and spacing "
        "around punctuation are forgiven, any other difference is not. The replacement keeps the file's "
        "indentation and line endings. Edits in one call are matched against the original file and must not "
        "overlap. Use near to pick one of several occurrences. dryRun: true previews the patch and returns an "
        "applyId; apply: <applyId> writes exactly that preview if the file has not changed. Block and skill "
        "files: only the body is searched, frontmatter is kept. Legacy old_text/new_text is accepted."
    ),
    params=Params(
        path=String(min_length=1, description="Absolute sandbox path of the file"),
        edits=Array(items=EDIT, required=False, description="Replacements, matched against the original file"),
        dryRun=Boolean(required=False, description="Preview only: return the patch and an applyId"),
        apply=String(required=False, description="applyId of a dry run to write; takes precedence over edits"),
    ),
    run=run,
    main_arg="path",
    prepare=_legacy,
    parse_body=parse_cell,
)
