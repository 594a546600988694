"""The model sees the original CireilClaw's tool definitions in cireil, except where the spec changes them.

The original's definitions are taken from the original itself: its own buildTools() and each provider's own
generate() (OpenAI chat completions, Anthropic messages, Codex responses) send a request to a local server, run
by tests/peer/driver/tool_definitions.mts. cireil's come from its registry through its own request builders.
For every tool both have, every difference (description, schema values, keys, key order) must be one the tool
declares (`Tool.spec_differences`, shown by `cireil tools --diff-original`), and every declared difference must
be there; tools only one side has must be declared so too.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cireil.runtime.config.engine_config import ModelConfig, ProviderConfig
from cireil.runtime.engine.anthropic import build_anthropic_body
from cireil.runtime.engine.codex import build_codex_body
from cireil.runtime.engine.openai import build_request_body
from cireil.runtime.engine.replytypes import ModelRequest
from cireil.runtime.toolkit.original_diff import ORIGINAL_ONLY
from cireil.runtime.toolkit.registry import BUILTIN_NAMES, builtin
from cireil.runtime.toolkit.tool import SpecDifference
from originalkit import Original

DRIVER = Path(__file__).parent / "driver" / "tool_definitions.mts"
PROVIDERS = ("openai", "anthropic", "codex")
# tools.toml of each case: every built-in enabled but these (exec as a table, the only form the original takes)
CONFIGS: dict[str, tuple[str, ...]] = {"edit on": (), "edit off": ("edit",)}


@pytest.fixture(scope="module")
def extracted(original: Original, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What the original sends: {"registry": [names], "configs": {label: {provider: [tool entries]}}}."""
    home = tmp_path_factory.mktemp("home")
    out = home / "tools.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CIREIL_DRIVER", "NODE_OPTIONS"))}
    env.update(
        HOME=str(home),
        NO_COLOR="1",
        CIREIL_DRIVER_CONFIG=json.dumps(
            {"src": str(original.runtime / "src"), "configs": {k: {"disabled": list(v)} for k, v in CONFIGS.items()}}
        ),
    )
    argv = [str(original.node), "--import", original.tsx_loader.as_uri(), str(DRIVER), str(out)]
    done = subprocess.run(argv, cwd=original.runtime, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and out.is_file(), f"the extraction failed ({done.returncode}):\n{done.stderr[-6000:]}"
    return json.loads(out.read_text())


def cireil_entries(provider: str, names: list[str]) -> list[dict]:
    """The `tools` of the request cireil's own builder makes for these enabled built-ins, in this order."""
    tools = [{"name": n, "description": builtin(n).description, "parameters": builtin(n).parameters} for n in names]
    request = ModelRequest(system="peer", messages=[], tools=tools, session_id="peer", model="m")
    config = ProviderConfig("p", api_base="http://127.0.0.1:1/v1")
    if provider == "openai":
        return build_request_body(config, ModelConfig(), request, stream=False)["tools"]
    if provider == "anthropic":
        return build_anthropic_body(config, ModelConfig(), request, stream=False)["tools"]
    return build_codex_body(config, ModelConfig(), request)["tools"]


def definition(provider: str, entry: dict) -> tuple[str, dict, list]:
    """(name, {"description", "parameters"}, the entry's own keys in order) of one provider's tool entry."""
    if provider == "openai":
        function = entry["function"]
        frame = [list(entry), list(function)]
        return function["name"], {"description": function["description"], "parameters": function["parameters"]}, frame
    schema = entry["input_schema"] if provider == "anthropic" else entry["parameters"]
    # Anthropic's last tool carries the request's cache mark: the request's, not the definition's (own test)
    keys = [k for k in entry if k != "cache_control"]
    rest = {k: entry[k] for k in keys if k not in ("description", "input_schema", "parameters")}
    return entry["name"], {"description": entry["description"], "parameters": schema}, [keys, rest]


def differences(theirs: Any, ours: Any, where: str = "") -> Iterator[str]:
    """Where two JSON values differ, as paths like `parameters.properties.input`; key order counts."""
    if isinstance(theirs, dict) and isinstance(ours, dict):
        for key in [*theirs, *(k for k in ours if k not in theirs)]:
            path = f"{where}.{key}" if where else key
            if key not in theirs or key not in ours:
                yield path
            else:
                yield from differences(theirs[key], ours[key], path)
        common = [k for k in theirs if k in ours]
        if common != [k for k in ours if k in theirs]:
            yield f"{where} (key order)"
    elif isinstance(theirs, list) and isinstance(ours, list) and len(theirs) == len(ours):
        for index, (a, b) in enumerate(zip(theirs, ours, strict=True)):
            yield from differences(a, b, f"{where}[{index}]")
    elif type(theirs) is not type(ours) or theirs != ours:
        yield where


def applies(difference: SpecDifference, disabled: tuple[str, ...]) -> bool:
    if not difference.when:
        return True
    tool, _, value = difference.when.partition(" = ")
    assert value == "false", f"unknown condition {difference.when!r}"
    return tool in disabled


def test_tools_on_one_side_only_are_the_declared_ones(extracted: dict[str, Any]) -> None:
    registry = extracted["registry"]
    cireil_only = {n for n in BUILTIN_NAMES if any(d.where == "tool" for d in builtin(n).spec_differences)}
    assert cireil_only == set(BUILTIN_NAMES) - set(registry)
    assert set(ORIGINAL_ONLY) == set(registry) - set(BUILTIN_NAMES)
    assert all(d.where == "tool" for d in ORIGINAL_ONLY.values())


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_every_difference_is_declared_and_every_declared_one_is_real(
    extracted: dict[str, Any], config: str, provider: str
) -> None:
    disabled = CONFIGS[config]
    sent = extracted["configs"][config][provider]
    theirs = {name: (d, frame) for name, d, frame in (definition(provider, e) for e in sent)}
    shared = [n for n in extracted["registry"] if n in BUILTIN_NAMES and n not in disabled]
    assert [n for n in theirs if n in BUILTIN_NAMES] == shared  # the original sent every enabled tool, in order
    ours = {name: (d, frame) for name, d, frame in (definition(provider, e) for e in cireil_entries(provider, shared))}

    problems = []
    for name in shared:
        (their_def, their_frame), (our_def, our_frame) = theirs[name], ours[name]
        assert our_frame == their_frame, f"{provider} {name}: the entry's own keys differ"
        actual = set(differences(their_def, our_def))
        declared = {d.where for d in builtin(name).spec_differences if applies(d, disabled)}
        for where in sorted(actual - declared):
            problems.append(f"{name}: {where} differs and no spec difference declares it")
        for where in sorted(declared - actual):
            problems.append(f"{name}: {where} is declared different but is the original's")
    assert not problems, "\n".join(problems)


def test_anthropic_marks_the_last_tool_for_caching_as_the_original_does(extracted: dict[str, Any]) -> None:
    sent = extracted["configs"]["edit on"]["anthropic"]
    ours = cireil_entries("anthropic", [e["name"] for e in sent if e["name"] in BUILTIN_NAMES])
    assert [list(e) for e in (sent[-1], ours[-1])] == [["description", "input_schema", "name", "cache_control"]] * 2
    assert sent[-1]["cache_control"] == ours[-1]["cache_control"]
    assert not any("cache_control" in e for e in [*sent[:-1], *ours[:-1]])
