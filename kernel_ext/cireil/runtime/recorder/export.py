"""A recorded turn as a pytest file (`%cireil export test TURN path.py`, `agent.export_test`).

The file carries the turn's recorded replies and tool results as data, so it keeps working after the
recording is evicted. It replays the turn on a throwaway copy of the agent (recorder/replay.py: the
replies from ScriptedLLM on loopback, no key, no network; the turn's MCP calls answered from its cassette,
carried in the file too, by an McpMock on loopback: no MCP server, no mcp.toml secret) and asserts:
- no recorded call is refused by the current tools (a tool gone, arguments of another shape);
- the sequence of tool calls, names and arguments, is the recorded one;
- each call succeeds or fails as it did;
- the result fields the person picked (`content`, or `read.content` for one tool) equal the recorded ones.
"""

from __future__ import annotations

import json
import math
import pprint
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.controls import visible
from ..base.names import escape

if TYPE_CHECKING:
    from .model import RecordedTurn

MAX_DEPTH = 100  # nesting levels of recorded arguments and results an exported test writes out

TEMPLATE = '''\
"""Turn {turn_id} of the agent at {agent_doc},
recorded {when} in session {session}, exported by cireil.

    {message}

Replays the recorded model replies offline (ScriptedLLM on loopback) with the agent's real tools on a
throwaway copy of its directory, {mcp_doc}, and fails when its tools or configuration no longer behave as
recorded.
Run it with plain pytest; re-export it after a change you mean.
"""

import json

import cireil
from cireil.runtime.recorder.model import RecordedTurn
from cireil.runtime.recorder.replay import replay_at

AGENT = {agent_dir}
TURN = json.loads({turn_json})
# the turn's MCP traffic (tools/list and every tools/call with its answer), served on loopback by the replay
CASSETTE = json.loads({cassette_json})
LIVE_MCP = {live_mcp}  # True: the live MCP servers answer instead
EXPECTED_CALLS = {calls}
# result fields checked per call ("step.position"): the recorded value of each
EXPECTED_FIELDS = {fields}


def same(a, b):
    """Equal as JSON: a NaN the model sent equals the NaN recorded (nan != nan in Python)."""
    return a == b or json.dumps(a, sort_keys=True, default=repr) == json.dumps(b, sort_keys=True, default=repr)


def test_turn_{turn_id}_replays_as_recorded():
    # the agent itself is never loaded (its MCP servers may be down): only a throwaway copy of it is
    result = replay_at(cireil.load, AGENT, RecordedTurn.from_dict(TURN), cassette=CASSETTE, live_mcp=LIVE_MCP)
    assert not result.invalid, "recorded calls the tools refuse now:\\n" + "\\n".join(result.invalid)
    calls = [[name, args] for name, args in result.tool_calls]
    assert same(calls, EXPECTED_CALLS), f"the tool calls changed: {{calls!r}}"
    for step in result.steps:
        for call in step.calls:
            assert call.replayed is not None, f"step {{step.n}}: {{call.name}} was not called"
            recorded = call.recorded or {{}}
            now = call.replayed
            where = f"step {{step.n}}, {{call.name}} {{json.dumps(call.arguments)}}"
            assert (now.get("success") is not False) == (recorded.get("success") is not False), (
                f"{{where}}: success changed: {{now.get('error', now)}}"
            )
            for field, value in EXPECTED_FIELDS.get(f"{{step.n}}.{{call.position}}", {{}}).items():
                assert same(now.get(field), value), f"{{where}}: result field {{field!r}} changed"
'''


def _docstring_safe(text: str) -> str:
    """Text that cannot end the module docstring, start an escape in it, or carry a control character."""
    return visible(escape(text)).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


class _Float(float):
    """A float that is not finite, written as code that makes it (`repr` gives `nan`, a NameError)."""

    def __repr__(self) -> str:
        return f'float("{float(self)!r}")'


def _literal_data(value: Any, depth: int = 0) -> Any:
    """JSON data whose `repr` (pprint's) is Python that rebuilds it: NaN and Infinity included."""
    if depth > MAX_DEPTH:
        raise ValueError(f"the recorded data is nested over {MAX_DEPTH} levels deep; it cannot be exported")
    if isinstance(value, float) and not math.isfinite(value):
        return _Float(value)
    if isinstance(value, dict):
        return {str(k): _literal_data(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_literal_data(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    return repr(value)  # not JSON data: shown, never evaluated


def _picked(fields: list[str], name: str, result: dict) -> dict[str, Any]:
    out = {}
    for spec in fields:
        tool, dot, field = spec.rpartition(".")
        if dot and tool != name:
            continue
        if field in result:
            out[field] = result[field]
    return out


def export_test(
    turn: RecordedTurn, agent_dir: Path, path: Path, fields: Sequence[str] = (), *, live_mcp: bool = False
) -> Path:
    """Write the pytest file for `turn` at `path` (a new file: an existing one is not replaced); with
    `live_mcp`, it calls the live MCP servers instead of serving the recorded answers."""
    from .mcpreplay import served_cassette

    path = Path(path)
    if path.suffix != ".py":
        raise ValueError(f"{path}: an exported test is a .py file")
    if path.exists():
        raise ValueError(f"{path} exists; give another name or remove it first")
    turn.check_whole()
    cassette = served_cassette(turn, None, live_mcp)  # refused here for an MCP turn recorded without one
    data = turn.to_dict()
    calls = [[c.name, c.arguments] for c in turn.calls]
    checked = {}
    for c in turn.calls:
        picked = _picked(list(fields), c.name, c.result)
        if picked:
            checked[f"{c.step}.{c.position}"] = picked
    message = " ".join(turn.text.split())
    message = (message[:200] + "…") if len(message) > 200 else message or "(no user message)"
    try:
        # validated first: recursion inside json or pprint would name nothing
        picked_calls, picked_fields = _literal_data(calls), _literal_data(checked)
        turn_json = json.dumps(data, ensure_ascii=True, sort_keys=True)
        cassette_json = json.dumps(cassette, ensure_ascii=True, sort_keys=True)
    except RecursionError:
        raise ValueError(f"turn {turn.id}: the recorded data is nested too deeply to export") from None
    text = TEMPLATE.format(
        turn_id=int(turn.id),
        agent_dir=ascii(str(Path(agent_dir).resolve())),
        agent_doc=_docstring_safe(str(Path(agent_dir).resolve())),
        when=turn.when,
        session=_docstring_safe(turn.session_id),
        message=_docstring_safe(message),
        # ASCII inside one literal: no character of the recording can end it, NaN round-trips through json
        turn_json=ascii(turn_json),
        cassette_json=ascii(cassette_json),
        live_mcp=bool(live_mcp),
        mcp_doc="its MCP calls calling the live servers" if live_mcp else "its MCP calls answered from the recording",
        calls=pprint.pformat(picked_calls, width=100, sort_dicts=True),
        fields=pprint.pformat(picked_fields, width=100, sort_dicts=True),
    )
    compile(text, str(path), "exec")  # a template bug fails here, not in the person's test run
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
