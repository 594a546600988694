"""A recorded turn as a pytest file (`%cireil export test TURN path.py`, `agent.export_test`).

The file carries the turn's recorded replies and tool results as data, so it keeps working after the
recording is evicted. It replays the turn on a throwaway copy of the agent (recorder/replay.py: the
replies from ScriptedLLM on loopback, no key, no network) and asserts:
- no recorded call is refused by the current tools (a tool gone, arguments of another shape);
- the sequence of tool calls, names and arguments, is the recorded one;
- each call succeeds or fails as it did;
- the result fields the person picked (`content`, or `read.content` for one tool) equal the recorded ones.
"""

from __future__ import annotations

import json
import pprint
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import RecordedTurn

TEMPLATE = '''\
"""Turn {turn_id} of the agent at {agent_doc},
recorded {when} in session {session}, exported by cireil.

    {message}

Replays the recorded model replies offline (ScriptedLLM on loopback) with the agent's real tools on a
throwaway copy of its directory, and fails when its tools or configuration no longer behave as recorded.
Run it with plain pytest; re-export it after a change you mean.
"""

import json

import cireil
from cireil.runtime.recorder.model import RecordedTurn
from cireil.runtime.recorder.replay import replay

AGENT = {agent_dir!r}
TURN = json.loads({turn_json!r})
EXPECTED_CALLS = {calls}
# result fields checked per call ("step.position"): the recorded value of each
EXPECTED_FIELDS = {fields}


def test_turn_{turn_id}_replays_as_recorded():
    agent = cireil.load(AGENT)
    try:
        result = replay(agent, RecordedTurn.from_dict(TURN))
    finally:
        agent.close()
    assert not result.invalid, "recorded calls the tools refuse now:\\n" + "\\n".join(result.invalid)
    assert [[name, args] for name, args in result.tool_calls] == EXPECTED_CALLS
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
                assert now.get(field) == value, f"{{where}}: result field {{field!r}} changed"
'''


def _docstring_safe(text: str) -> str:
    """Text that cannot end the module docstring or start an escape in it."""
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def _picked(fields: list[str], name: str, result: dict) -> dict[str, Any]:
    out = {}
    for spec in fields:
        tool, dot, field = spec.rpartition(".")
        if dot and tool != name:
            continue
        if field in result:
            out[field] = result[field]
    return out


def export_test(turn: RecordedTurn, agent_dir: Path, path: Path, fields: Sequence[str] = ()) -> Path:
    """Write the pytest file for `turn` at `path` (a new file: an existing one is not replaced)."""
    path = Path(path)
    if path.suffix != ".py":
        raise ValueError(f"{path}: an exported test is a .py file")
    if path.exists():
        raise ValueError(f"{path} exists; give another name or remove it first")
    data = turn.to_dict()
    calls = [[c.name, c.arguments] for c in turn.calls]
    checked = {}
    for c in turn.calls:
        picked = _picked(list(fields), c.name, c.result)
        if picked:
            checked[f"{c.step}.{c.position}"] = picked
    message = " ".join(turn.text.split())
    message = (message[:200] + "…") if len(message) > 200 else message or "(no user message)"
    text = TEMPLATE.format(
        turn_id=turn.id,
        agent_dir=str(Path(agent_dir).resolve()),
        agent_doc=_docstring_safe(str(Path(agent_dir).resolve())),
        when=turn.when,
        session=_docstring_safe(turn.session_id),
        message=_docstring_safe(message),
        turn_json=json.dumps(data, ensure_ascii=False, sort_keys=True),
        calls=pprint.pformat(calls, width=100, sort_dicts=True),
        fields=pprint.pformat(checked, width=100, sort_dicts=True),
    )
    compile(text, str(path), "exec")  # a template bug fails here, not in the person's test run
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
