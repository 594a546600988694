"""A recorded session as a notebook (`%cireil export notebook SESSION PATH.ipynb`, `agent.export_notebook`).

The notebook replays the session offline, one cell per turn: it starts ScriptedLLM on loopback, loads a
throwaway copy of the agent pointed at it (recorder/replay.py's `offline_copy`), then for each recorded
turn scripts that turn's recorded replies and sends its message as `%%cireil_agent --session` would, so
the turn renders as it did, tools running for real on the copy. The replies travel in the notebook as
data; the agent is read from its directory when the notebook runs. Attachments of a message are not
carried along. A turn recorded in step mode is replayed as the model asked, and its heading says which
calls the person had edited, skipped or mocked (`%cireil replay` and an exported test do those again).

The session's MCP calls are answered from the turns' cassettes (one McpMock on loopback serving them in
order, the copy's mcp.toml pointed at it: no MCP server, no mcp.toml secret), or by the live servers when
exported with `live_mcp=True`.

Exported notebooks are shared, and everything in them came from a model, a person or a hand-edited
recording: no recorded text is ever written where IPython or Python would read it as code. The session
id and the message are Python string literals (`ascii()`: one line, no character that could end them)
handed to `run_cell_magic` as the cell body, never on a magic's line, where IPython expands `{expr}` and
`$name` and a space starts an option; the recorded data is a JSON text in such a literal (NaN and
Infinity round-trip through `json.loads`); Markdown shows recorded text only inside code spans, so that
no image loads and no markup applies when the notebook is opened.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.controls import visible
from ..base.names import escape

if TYPE_CHECKING:
    from .model import RecordedTurn

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
MARKDOWN_LIMIT = 200  # characters of a recorded name or message shown in a heading; the code cell has it all

SETUP = """\
import json
import shlex

import cireil
from cireil.runtime.base.scratch import scratch_dir
from cireil.runtime.recorder.model import RecordedTurn
from cireil.runtime.recorder.mcpreplay import start_mock, with_every_server
from cireil.runtime.recorder.replay import offline_copy, scripted_replies
from cireil.testing.scripted_llm import ScriptedLLM, reply

AGENT = {agent}
# the session's MCP traffic, answered on loopback in recorded order (None: the live servers answer)
CASSETTE = {cassette}
# a turn that asks for more than was recorded ends quietly
llm = ScriptedLLM(default=reply.tool_calls(("no-response", {{}}))).start()
mock = start_mock(with_every_server(CASSETTE, AGENT)) if CASSETTE is not None else None
# a throwaway copy, removed when this kernel ends, however it ends
copy = offline_copy(AGENT, llm.base_url, scratch_dir("cireil-replay-"), mock)
copy_arg = shlex.quote(str(copy))  # one word however the temporary directory is named


def send(session: str, message: str) -> None:
    \"\"\"What `%%cireil_agent --session SESSION` with MESSAGE as its body does; both stay data.\"\"\"
    agent = cireil.current_agent()
    agent.session = agent.session_for(session)
    get_ipython().run_cell_magic("cireil_agent", "", message)


%load_ext cireil
%cireil load $copy_arg"""


def literal(value: str) -> str:
    """`value` as a Python string literal on one line, in ASCII: nothing in it is code to Python or IPython."""
    return ascii(value)


def json_literal(value: object) -> str:
    """`value` (JSON data, NaN and Infinity included) as Python code that rebuilds it: json.loads of a literal."""
    try:
        text = json.dumps(value, ensure_ascii=True, sort_keys=True)
    except RecursionError:
        raise ValueError("the recorded data is nested too deeply to export") from None
    return f"json.loads({literal(text)})"


def md_code(text: str, limit: int = MARKDOWN_LIMIT) -> str:
    """`text` as one Markdown code span: shown as it is, no markup, no image, no HTML; controls made visible."""
    if len(text) > limit:
        text = text[:limit] + "…"
    text = visible(escape(text)).replace("\n", "\u2424")  # ␤: a blank line would end the span
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"  # one space each side is stripped by CommonMark, so edges stay as they are


PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._:-]*")  # nothing Markdown would act on (no URL: no "/")


def md_text(text: str) -> str:
    """`text` as it is when Markdown has nothing to act on in it (a tool name, a time), else as a code span."""
    return text if len(text) <= MARKDOWN_LIMIT and PLAIN.fullmatch(text) else md_code(text)


def export_notebook(
    turns: Sequence[RecordedTurn], agent_dir: Path, session_id: str, path: Path, *, live_mcp: bool = False
) -> Path:
    """Write the notebook at `path` (a new file: an existing one is not replaced)."""
    from .mcpreplay import merged, served_cassette

    path = Path(path)
    if path.suffix != ".ipynb":
        raise ValueError(f"{path}: an exported notebook is an .ipynb file")
    if path.exists():
        raise ValueError(f"{path} exists; give another name or remove it first")
    if not turns:
        raise ValueError(f"session {session_id} has no recorded turn")
    for turn in turns:
        turn.check_whole()
    cassette = merged(served_cassette(t, None, live_mcp) for t in turns)
    agent_dir = Path(agent_dir).resolve()
    cells = [
        new_markdown_cell(
            f"# Session {md_code(session_id)}, replayed offline\n\n"
            f"{len(turns)} recorded turn(s) of the agent at {md_code(str(agent_dir), 1000)}, exported by cireil.\n"
            "Each turn's model replies come from the recording (ScriptedLLM on 127.0.0.1: no key, no network);\n"
            "the tools run for real on a throwaway copy of the agent, so results may differ from the original run\n"
            "where its files have changed since."
        ),
        new_code_cell(
            SETUP.format(
                agent=literal(str(agent_dir)), cassette=json_literal(cassette) if cassette is not None else "None"
            )
        ),
    ]
    for turn in turns:
        text = turn.text.strip() or "(no message)"
        heading = (
            f"## Turn {int(turn.id)} · {md_text(turn.when)} · {int(turn.step_count)} model call(s), "
            f"ended: {md_text(str(turn.ended))}\n\n{md_code(text)}"
        )
        reviewed = [
            f"{md_text(str(c.name))} ({md_text(str(c.action))})"
            for c in turn.calls
            if c.action not in (None, "approved")
        ]
        if reviewed:
            heading += (
                "\n\nRecorded in step mode, where the person changed these calls: "
                + ", ".join(reviewed)
                + ". This cell runs every call as the model asked; `%cireil replay` does what the person did."
            )
        cells.append(new_markdown_cell(heading))
        cells.append(
            new_code_cell(
                f"llm.script(*scripted_replies(RecordedTurn.from_dict({json_literal(turn.to_dict())})))\n"
                f"send({literal(session_id)}, {literal(text)})"
            )
        )
    cells.append(new_code_cell("llm.stop()\nif mock is not None:\n    mock.stop()"))
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
