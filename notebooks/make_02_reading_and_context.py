"""Build notebooks/02-reading-and-context.ipynb from the cells below (run it after changing them).

python notebooks/make_02_reading_and_context.py
"""

from __future__ import annotations

from pathlib import Path

from nbbuild import write_notebook
from nbformat.v4 import new_code_cell, new_markdown_cell

HANDBOOK = "/workspace/garden-handbook.md"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        """# Reading and context

An agent reads more than it does anything else, and what it reads ends up in its context. In this tutorial
you read the demo agent's long garden handbook, explore the outline the agent gets instead of 29 KB of text,
pin two sections, and look at exactly what the agent would see on its next model call.""",
    ),
    ("code", "%load_ext cireil\n%cireil load --demo"),
    (
        "md",
        """## 1. Reading a long document

`read` returns the text of a short file. A long file (over about 2,000 tokens, estimated as characters / 3)
with headings returns an **outline** instead: every section with its id, level, first line and span. A
section's span runs from its heading over its sub-sections to the next heading of the same or a higher level.

Click ▸ to unfold a part of the tree. Every row has its own **open**, which pins that section through
`open-file`, so the session's state stays the single truth (try one, then press *outline* to come back).""",
    ),
    ("code", f"%cireil_read {HANDBOOK}"),
    (
        "md",
        """## 2. Exploring the outline in Python

Underneath is the dict the agent receives. The handbook has two *Watering* sections (spring and summer): ids are
unique within a file, so the second one is `watering-1`. The heading `## [Composting](https://…) at the garden`
gets its id from the link's label, never from its destination. The `#` lines inside the fenced configuration
block are code, not headings.""",
    ),
    (
        "code",
        f"""import cireil

agent = cireil.current_agent()
outline = agent.call("read", path="{HANDBOOK}").data["outline"]
print(f"{{outline['lines']}} lines, {{len(outline['sections'])}} sections, ~{{outline['estTokens']}} tokens")
for s in outline["sections"]:
    if s["label"] in ("Watering", "Composting at the garden"):
        print(f"{{s['id']:<26}} {{s['type']}}  line {{s['line']:>3}}  spans {{s['lines']:>2}} lines")""",
    ),
    (
        "md",
        "`raw=true` skips the outline and returns the full text, for when the agent really needs all of it:",
    ),
    ("code", f'print(agent.call("read", path="{HANDBOOK}", raw=True).data["content"][:240])'),
    (
        "md",
        """## 3. Pinning two sections

`open-file` pins a file into the agent's context; with `sections` it pins only those (each with its
sub-sections). Here: summer watering and the composting chapter.""",
    ),
    ("code", f'%cireil_open_file {{"path": "{HANDBOOK}", "sections": ["watering-1", "composting-at-the-garden"]}}'),
    (
        "md",
        """## 4. What the agent sees

`%cireil context` renders the opened files exactly as they are placed in the model's context: one `<file>` per
opened file, one `<section>` per pinned section, in the order they were pinned. `agent.context()` gives the same
in Python.""",
    ),
    ("code", "%cireil context"),
    (
        "md",
        """`read-sections` adds sections to a file that is already open; sections already pinned stay as they are.""",
    ),
    ("code", f'%cireil_read_sections {{"path": "{HANDBOOK}", "sections": ["blight"]}}'),
    (
        "md",
        """## 5. When the file changes

Pinned sections are rendered from the file as it is now. If someone renames a heading, the pinned id no
longer exists, and the context says so plainly instead of silently dropping it; the agent re-reads and pins
the new id. (A `write` or `edit` by the agent itself unpins the file's sections instead: it renders whole.)""",
    ),
    (
        "code",
        """handbook = agent.directory / "workspace" / "garden-handbook.md"
handbook.write_text(handbook.read_text().replace("### Blight", "### Blight and mildew"))
ctx = agent.context()
print([f["missing"] for f in ctx.files])
print(ctx.text[ctx.text.index('<section id="blight">') :][:220])""",
    ),
    (
        "md",
        """Unknown ids are refused before anything changes, with the list of ids that do exist:""",
    ),
    ("code", f'agent.call("open-file", path="{HANDBOOK}", sections=["blight"]).data["error"][:120]'),
    ("code", f'%cireil_open_file {{"path": "{HANDBOOK}", "closeSections": ["blight"]}}'),
    (
        "md",
        """## 6. Limits, pictures, skills

Text files over 262,144 bytes are refused before any content or outline is produced (also with `raw`); the
error says how big the file is and how to read less. Pictures and videos are not text: they are attached for
the agent's next model call, and shown here.""",
    ),
    (
        "code",
        """(agent.directory / "workspace" / "big.log").write_text("x" * 300_000)
agent.call("read", path="/workspace/big.log").data""",
    ),
    (
        "code",
        """import base64

dot = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGPQqLAhCTGMahjVMHw1AADiwNwBMcAVPAAAAABJRU5ErkJggg=="
)
(agent.directory / "workspace" / "plot-map.png").write_bytes(dot)
agent.call("read", path="/workspace/plot-map.png")""",
    ),
    ("md", "Skills are read by slug; the view shows the name and description from the skill's frontmatter."),
    ("code", "%cireil_read_skill outline-first-editing"),
    (
        "md",
        """Closing the file removes it, and its pinned sections, from the agent's context.""",
    ),
    ("code", f"%cireil_close_file {HANDBOOK}\n%cireil context"),
]


if __name__ == "__main__":
    cells = [new_markdown_cell(source) if kind == "md" else new_code_cell(source) for kind, source in CELLS]
    write_notebook(Path(__file__).with_name("02-reading-and-context.ipynb"), cells)
