"""Non-UTF-8 file names: shown, listed, opened and sent to the model escaped (caf\\xe9.txt), never a crash."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import cireil
from cireil.render import result_bundle
from cireil.runtime.base import names
from cireil.testing.scripted_llm import ScriptedLLM, reply
from turnkit import turn_agent

RAW = b"caf\xe9 \xff.txt"  # Latin-1 and a byte no encoding has: not UTF-8
SHOWN = "caf\\xe9 \\xff.txt"


@pytest.fixture
def agent(tmp_path: Path, llm: ScriptedLLM):
    root = turn_agent(tmp_path, llm.base_url)
    with open(os.path.join(os.fsencode(root / "workspace"), RAW), "wb") as f:
        f.write(b"bytes in a badly named file\n")
    a = cireil.load(root)
    yield a
    a.close()


def test_escape_round_trip():
    raw = RAW.decode("utf-8", "surrogateescape")
    assert names.escape(raw) == SHOWN
    assert names.unescape_path("/workspace/" + SHOWN) == "/workspace/" + raw
    assert names.escape("\ud800 ok") == "\\ud800 ok"  # a surrogate that is not a byte stays visible text
    same = {"a": ["plain", {"b": "text"}]}
    assert names.clean(same) is same  # nothing to escape: nothing copied


def test_list_open_read_and_context_show_the_escaped_name(agent):
    listed = agent.call("list-dir", path="/workspace")
    assert listed.success and SHOWN in [e["name"] for e in listed.data["entries"]]
    json.dumps(listed.data, ensure_ascii=False).encode("utf-8")  # what the model and the store get
    result_bundle(listed)  # and the notebook
    path = "/workspace/" + SHOWN
    read = agent.call("read", path=path)
    assert read.success and "bytes in a badly named file" in read.data["content"]
    opened = agent.call("open-file", path=path)
    assert opened.success and opened.data["open"] == [path]
    context = str(agent.context())
    assert f'<file path="{path}"' in context and "bytes in a badly named file" in context
    context.encode("utf-8")


def test_a_turn_that_lists_and_opens_it_completes(agent, llm):
    path = "/workspace/" + SHOWN
    llm.script(
        reply.tool_calls(("list-dir", {"path": "/workspace"}), ("open-file", {"path": path})),
        reply.tool_calls(("respond", {"content": "opened"})),
    )
    outcome = agent.turn("open the odd file")
    assert outcome.ended == "respond", outcome.error
    second = llm.requests[1].body
    listing = next(m for m in second["messages"] if m["role"] == "tool")["content"]
    assert SHOWN.replace("\\", "\\\\") in listing  # escaped once more by JSON, never a raw surrogate
    assert any("bytes in a badly named file" in json.dumps(m) for m in second["messages"])
    llm.script(reply.tool_calls(("respond", {"content": "again"})))
    assert agent.turn("and again").ended == "respond"  # the session is not stuck


def test_a_view_of_a_call_with_a_raw_name_in_its_arguments_encodes():
    from cireil.runtime.toolkit.result import ToolResult

    raw = RAW.decode("utf-8", "surrogateescape")
    data = {"exitCode": 0, "success": True, "stdout": "ok", "stdoutLength": 2, "stderrLength": 0}
    bundle = result_bundle(ToolResult("exec", {"command": "cat", "args": [raw]}, data))
    for key in ("text/plain", "text/html"):
        bundle[key].encode("utf-8")
        assert SHOWN in bundle[key]
