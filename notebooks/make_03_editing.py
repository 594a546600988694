"""Build notebooks/03-editing.ipynb (run: .venv/bin/python notebooks/make_03_editing.py)."""

from __future__ import annotations

from pathlib import Path

from nbbuild import write_notebook
from nbformat.v4 import new_code_cell, new_markdown_cell

OUT = Path(__file__).resolve().parent / "03-editing.ipynb"

md, code = new_markdown_cell, new_code_cell

CELLS = [
    md(
        "# Editing files with `edit`\n\n"
        "`edit` replaces text in a file the way an agent does it: each edit names the text to find (`oldText`)\n"
        "and what replaces it (`newText`). It forgives whitespace — indentation depth, tabs vs spaces,\n"
        "trailing spaces, line endings — but never content, so a stale or invented `oldText` is refused\n"
        "instead of landing in the wrong place. In this tutorial you will preview a patch, apply it, watch a\n"
        "stale preview being refused, and edit a block file without touching its frontmatter."
    ),
    code("%load_ext cireil\n%cireil load --demo"),
    code(
        "import cireil\n\n"
        "agent = cireil.current_agent()\n"
        "print((agent.directory / 'workspace' / 'harvest_report.py').read_text()[:420])"
    ),
    md(
        "## 1. Preview a patch\n\n"
        "The cell form takes one or more `SEARCH`/`REPLACE` blocks. With `--dry-run` nothing is written: you\n"
        "get the patch, and where widgets run, **Apply** and **Discard** buttons under it. Note that the\n"
        "`SEARCH` text below is indented with 2 spaces while the file uses 4 — `edit` still finds it, and the\n"
        "replacement is re-indented to the file's 4 spaces."
    ),
    code(
        "%%cireil_edit /workspace/harvest_report.py --dry-run\n"
        "<<<<<<< SEARCH\n"
        "  width = max(len(crop) for crop in crops)\n"
        "=======\n"
        "  if not crops:\n"
        '      print("no harvest logged yet")\n'
        "      return\n"
        "  width = max(len(crop) for crop in crops)\n"
        ">>>>>>> REPLACE\n"
    ),
    md(
        "The same call from Python returns the result the agent would see: `detail`, a numbered `diff`,\n"
        "the unified `patch`, per-edit line metadata and the `applyId` that applies exactly this preview.\n\n"
        "From here on the tutorial edits a **copy** of the file, so the preview above stays valid: its Apply\n"
        "button still works after you run the whole notebook (a preview is refused once its file changed)."
    ),
    code(
        "import shutil\n\n"
        'workspace = agent.directory / "workspace"\n'
        'shutil.copy(workspace / "harvest_report.py", workspace / "harvest_copy.py")\n\n'
        "preview = agent.call(\n"
        '    "edit",\n'
        '    path="/workspace/harvest_copy.py",\n'
        '    edits=[{"oldText": "width = max(len(crop) for crop in crops)",\n'
        '            "newText": "width = max((len(crop) for crop in crops), default=5)"}],\n'
        "    dryRun=True,\n"
        ")\n"
        'print(preview["detail"])\n'
        'print(preview["diff"])'
    ),
    md(
        "## 2. Apply it\n\n"
        "Pressing **Apply** calls `edit` with `{path, apply: applyId}`; from Python that is one call. Apply\n"
        "writes exactly what was previewed (atomically) and returns the same patch:"
    ),
    code('applied = agent.call("edit", path="/workspace/harvest_copy.py", apply=preview["applyId"])\napplied'),
    md(
        "## 3. A stale preview is refused\n\n"
        "A preview is only valid for the file it saw. Take a new preview, then change the file behind its back\n"
        "(as a formatter or another edit would): applying the old preview is refused, and the file is left\n"
        "alone. A failing tool *result* is not an exception, so this cell runs on."
    ),
    code(
        "stale = agent.call(\n"
        '    "edit",\n'
        '    path="/workspace/harvest_copy.py",\n'
        '    edits=[{"oldText": "print(f\\"{\'total\'", "newText": "print(f\\"{\'TOTAL\'"}],\n'
        "    dryRun=True,\n"
        ")\n"
        'report = workspace / "harvest_copy.py"\n'
        'report.write_text(report.read_text() + "\\n# touched by someone else\\n")\n'
        'refused = agent.call("edit", path="/workspace/harvest_copy.py", apply=stale["applyId"])\n'
        "refused"
    ),
    md(
        "`oldText` that is not in the file is refused too — here a word is misspelled. When the `newText` is\n"
        "already there (the edit was applied before), the error says so:"
    ),
    code(
        'agent.call("edit", path="/workspace/harvest_copy.py",\n'
        '           edits=[{"oldText": "for crop, kg in sorted(crops.itmes())", "newText": "for crop, kg in crops"}])'
    ),
    code(
        "# the edit from section 2, sent a second time\n"
        'agent.call("edit", path="/workspace/harvest_copy.py",\n'
        '           edits=[{"oldText": "width = max(len(crop) for crop in crops)",\n'
        '                   "newText": "width = max((len(crop) for crop in crops), default=5)"}])'
    ),
    md(
        "## 4. Edit a block file\n\n"
        "Block files (`/blocks/*.md`) carry TOML frontmatter between `+++` lines. `edit` searches and replaces\n"
        "in the body only: the frontmatter is kept byte for byte (and checked), and the patch shows body lines\n"
        "only, numbered from the start of the body."
    ),
    code(
        "%%cireil_edit /blocks/person.md\n"
        "<<<<<<< SEARCH\n"
        "She prefers short answers with the detail linked rather\n"
        "=======\n"
        "She prefers short answers, with the detail linked rather\n"
        ">>>>>>> REPLACE\n"
    ),
    code('print((agent.directory / "blocks" / "person.md").read_text())'),
    md("Mistakes in the cell syntax itself are caught before anything runs (this cell is meant to fail):"),
    code(
        "%%cireil_edit /blocks/person.md\n<<<<<<< SEARCH\nMaya\n=======\nMaya O.\n",
        metadata={"tags": ["raises-exception"]},
    ),
    md(
        "## Where next\n\n"
        '- `near` picks one of several occurrences: a string near the edit, `{"symbol": ..., "line": ...}`, or\n'
        '  `{"startLine": ..., "endLine": ...}`.\n'
        "- `all: true` (`--all` in the cell form) replaces every occurrence.\n"
        "- `%cireil_edit?` shows the full syntax."
    ),
]


def main() -> None:
    write_notebook(OUT, CELLS)


if __name__ == "__main__":
    main()
