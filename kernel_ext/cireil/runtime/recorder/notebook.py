"""A recorded session as a notebook (`%cireil export notebook SESSION PATH.ipynb`, `agent.export_notebook`).

The notebook replays the session offline, one cell per turn: it starts ScriptedLLM on loopback, loads a
throwaway copy of the agent pointed at it (recorder/replay.py's `offline_copy`), then for each recorded
turn scripts that turn's recorded replies and sends its message with `%%cireil_agent`, so the turn renders
as it did, tools running for real on the copy. The replies travel in the notebook as data; the agent is
read from its directory when the notebook runs. Attachments of a message are not carried along. A turn
recorded in step mode is replayed as the model asked, and its heading says which calls the person had
edited, skipped or mocked (`%cireil replay` and an exported test do those again).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import RecordedTurn

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def export_notebook(turns: Sequence[RecordedTurn], agent_dir: Path, session_id: str, path: Path) -> Path:
    """Write the notebook at `path` (a new file: an existing one is not replaced)."""
    path = Path(path)
    if path.suffix != ".ipynb":
        raise ValueError(f"{path}: an exported notebook is an .ipynb file")
    if path.exists():
        raise ValueError(f"{path} exists; give another name or remove it first")
    if not turns:
        raise ValueError(f"session {session_id} has no recorded turn")
    agent_dir = Path(agent_dir).resolve()
    cells = [
        new_markdown_cell(
            f"# Session `{session_id}`, replayed offline\n\n"
            f"{len(turns)} recorded turn(s) of the agent at `{agent_dir}`, exported by cireil. Each turn's model\n"
            "replies come from the recording (ScriptedLLM on 127.0.0.1: no key, no network); the tools run for\n"
            "real on a throwaway copy of the agent, so results may differ from the original run where its files\n"
            "have changed since."
        ),
        new_code_cell(
            "import json\n"
            "import tempfile\n\n"
            "from cireil.runtime.recorder.model import RecordedTurn\n"
            "from cireil.runtime.recorder.replay import offline_copy, scripted_replies\n"
            "from cireil.testing.scripted_llm import ScriptedLLM, reply\n\n"
            f"AGENT = {str(agent_dir)!r}\n"
            "# a turn that asks for more than was recorded ends quietly\n"
            'llm = ScriptedLLM(default=reply.tool_calls(("no-response", {}))).start()\n'
            "copy = offline_copy(AGENT, llm.base_url, tempfile.mkdtemp(prefix='cireil-replay-'))\n"
            "%load_ext cireil\n"
            "%cireil load $copy"
        ),
    ]
    for turn in turns:
        text = turn.text.strip() or "(no message)"
        data = json.dumps(turn.to_dict(), ensure_ascii=False, sort_keys=True)
        heading = f"## Turn {turn.id} · {turn.when} · {turn.step_count} model call(s), ended: {turn.ended}"
        reviewed = [f"{c.name} ({c.action})" for c in turn.calls if c.action not in (None, "approved")]
        if reviewed:
            heading += (
                "\n\nRecorded in step mode, where the person changed these calls: "
                + ", ".join(reviewed)
                + ". This cell runs every call as the model asked; `%cireil replay` does what the person did."
            )
        cells.append(new_markdown_cell(heading))
        cells.append(new_code_cell(f"llm.script(*scripted_replies(RecordedTurn.from_dict(json.loads({data!r}))))"))
        cells.append(new_code_cell(f"%%cireil_agent --session {session_id}\n{text}"))
    cells.append(new_code_cell("llm.stop()"))
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(nb, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# nbformat 4.5 cells, written directly: nbformat is Jupyter's, not one of cireil's own dependencies
def new_markdown_cell(source: str) -> dict:
    return {"cell_type": "markdown", "id": uuid.uuid4().hex[:8], "metadata": {}, "source": source}


def new_code_cell(source: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": uuid.uuid4().hex[:8],
        "metadata": {},
        "outputs": [],
        "source": source,
    }
