"""Plugins: local folders and installed packages (entry points) listed in <root>/config/plugins.toml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.outline import build_outline, unregister_extractor
from conftest import REPO, make_agent
from pluginkit import local_plugin, shadow

EXAMPLE = REPO / "examples" / "plugins" / "cireil-example-plugin"


@pytest.fixture(autouse=True)
def _forget_extractors():
    yield
    unregister_extractor("org")  # the outline pipeline is process-wide


def runtime(tmp_path: Path, plugins_toml: str, tools: str = "list-dir = true\nword-count = true\n") -> Path:
    root = tmp_path / "root"
    (root / "config").mkdir(parents=True)
    (root / "config" / "plugins.toml").write_text(plugins_toml)
    return make_agent(root / "agents", tools, name="a")


def errors(agent: Path) -> list[str]:
    report = cireil.dry_run(agent)
    with pytest.raises(ConfigError):
        cireil.load(agent)
    return [str(i) for i in report.errors]


def test_a_local_folder_plugin_adds_its_tool_and_extractor(tmp_path):
    agent = runtime(tmp_path, '[[plugins]]\nname = "cireil_example_plugin"\n')
    shutil.copytree(EXAMPLE / "cireil_example_plugin", agent.parents[1] / "plugins" / "cireil_example_plugin")
    loaded = cireil.load(agent)
    tool = loaded.tool("word-count")
    assert tool.origin == "plugin:example"
    assert loaded.call("word-count", text="two words\nthree")["words"] == 3
    failed = loaded.call("word-count", text=" ")
    assert not failed.success and failed["hint"].startswith("pass some text")
    outline = build_outline("/workspace/notes.org", "* Top\nbody\n** Inner\nmore\n", force=True)
    assert [s["label"] for s in outline["sections"]] == ["Top", "Inner"]


def test_plugin_tools_must_be_enabled_by_name(tmp_path):
    agent = runtime(tmp_path, '[[plugins]]\nname = "p"\n', tools="list-dir = true\n")
    local_plugin(agent, "p", shadow("p", "shout"))
    loaded = cireil.load(agent)
    assert [t.name for t in loaded.tools] == ["list-dir"]
    (agent / "config" / "tools.toml").write_text("shout = true\n")
    assert loaded.call("shout")["from"] == "p"


def test_an_installed_package_plugin_is_found_by_its_entry_point(tmp_path, monkeypatch):
    site = tmp_path / "site"
    dist = site / "cireil_example_plugin-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: cireil-example-plugin\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text("[cireil.plugins]\nexample = cireil_example_plugin:plugin\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(EXAMPLE))
    agent = runtime(tmp_path, '[[plugins]]\npackage = "example"\n')
    assert cireil.load(agent).tool("word-count").origin == "plugin:example"


def test_a_missing_package_is_named_with_what_to_do(tmp_path, monkeypatch):
    # no Python entry point: an npm plugin of the original's root (test_js_plugins.py runs those); here not
    # installed, or no Node to run it: named as not loaded, and the agent still loads
    monkeypatch.setenv("CIREIL_NODE", str(tmp_path / "no-node"))
    agent = runtime(tmp_path, '# plugins\n[[plugins]]\npackage = "nowhere"\n', tools="list-dir = true\n")
    [warning] = [str(w) for w in cireil.load(agent).warnings]
    assert warning.startswith("../../config/plugins.toml:2: warning: plugin package 'nowhere' did not load: ")


def test_a_plugin_that_fails_to_import_names_itself_and_the_error(tmp_path):
    agent = runtime(tmp_path, '[[plugins]]\nname = "ok"\n\n[[plugins]]\nname = "broken"\n', tools="list-dir = true\n")
    local_plugin(agent, "ok", shadow("ok", "fine"))
    local_plugin(agent, "broken", "import not_a_module_anywhere\n")
    assert errors(agent) == [
        "../../config/plugins.toml:4: plugin 'broken' failed to import: ModuleNotFoundError: "
        "No module named 'not_a_module_anywhere'"
    ]


def test_replacing_a_built_in_needs_allow_override(tmp_path):
    agent = runtime(tmp_path, '[[plugins]]\nname = "w"\n', tools="write = true\n")
    local_plugin(agent, "w", shadow("w", "write"))
    assert errors(agent) == [
        "../../config/plugins.toml:1: plugin 'w': tool 'write' has the name of a built-in tool; "
        "set allowOverride = true in this entry to replace it"
    ]
    (agent.parents[1] / "config" / "plugins.toml").write_text('[[plugins]]\nname = "w"\nallowOverride = true\n')
    loaded = cireil.load(agent)
    assert loaded.tool("write").origin == "plugin:w"
    assert loaded.call("write")["from"] == "w"


def test_two_plugins_never_share_a_tool_name_even_with_allow_override(tmp_path):
    toml = '[[plugins]]\nname = "a1"\nallowOverride = true\n[[plugins]]\nname = "a2"\nallowOverride = true\n'
    agent = runtime(tmp_path, toml, tools="twin = true\n")
    local_plugin(agent, "a1", shadow("a1", "twin"))
    local_plugin(agent, "a2", shadow("a2", "twin"))
    assert errors(agent) == ["../../config/plugins.toml:4: plugins 'a1' and 'a2' both provide tool 'twin'"]


def test_an_entry_needs_exactly_one_of_name_or_package(tmp_path):
    agent = runtime(tmp_path, '[[plugins]]\nname = "a"\npackage = "b"\n[[plugins]]\nallowOverride = true\n', "")
    assert errors(agent) == [
        "../../config/plugins.toml:1: a [[plugins]] entry needs exactly one of name (a folder) or package",
        "../../config/plugins.toml:4: a [[plugins]] entry needs exactly one of name (a folder) or package",
    ]


def test_an_agent_outside_a_runtime_root_has_no_plugins(tmp_path):
    assert cireil.load(make_agent(tmp_path)).tools


STATEFUL = """\
    from cireil import Tool
    from cireil.params import Params, String
    from cireil.plugin import Plugin, settings, state

    async def remember(args, ctx):
        store = state(ctx, "keeper")
        store.write(args["key"], args["value"])
        return {"keys": store.keys(), "used": store.used()}

    async def recall(args, ctx):
        value = state(ctx, "keeper").read(args["key"])
        return {"value": value.decode() if value is not None else None}

    async def show_settings(args, ctx):
        return {"agent": settings(ctx, "keeper"), "global": settings(ctx, "keeper", scope="global")}

    plugin = Plugin(
        "keeper",
        tools=(
            Tool("remember", "Keep a value.", Params(key=String(), value=String()), remember),
            Tool("recall", "Read a value.", Params(key=String()), recall),
            Tool("keeper-settings", "Its settings.", Params(), show_settings),
        ),
    )
"""


def test_a_plugin_gets_its_settings_and_private_state_within_its_quota(tmp_path):
    tools = "remember = true\nrecall = true\nkeeper-settings = true\n"
    agent = runtime(tmp_path, '[[plugins]]\nname = "keeper"\nstateQuotaBytes = 10\n', tools)
    local_plugin(agent, "keeper", STATEFUL)
    (agent.parents[1] / "config" / "plugins").mkdir()
    (agent.parents[1] / "config" / "plugins" / "keeper.toml").write_text('apiKey = "global-key"\n')
    (agent / "config" / "plugins").mkdir()
    (agent / "config" / "plugins" / "keeper.toml").write_text("[limits]\nmax = 3\n")
    loaded = cireil.load(agent)
    assert loaded.warnings == []
    assert loaded.call("keeper-settings").data == {"agent": {"limits": {"max": 3}}, "global": {"apiKey": "global-key"}}
    assert loaded.call("remember", key="a", value="12345").data == {"keys": ["a"], "used": 5}
    folder = agent / "state" / "keeper"
    assert (folder / "a").stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700
    assert loaded.call("remember", key="a", value="1234567890").success  # a replacement counts once
    over = loaded.call("remember", key="b", value="x")
    assert not over.success and "plugin state quota exceeded: 11 bytes" in over["error"]
    assert sorted(p.name for p in folder.iterdir()) == ["a"]  # nothing half-written, no temporary left
    assert loaded.call("recall", key="a")["value"] == "1234567890"
    bad = loaded.call("remember", key="../escape", value="x")
    assert not bad.success and "must be a plain file name" in bad["error"]
    assert not (agent / "state" / "escape").exists()


def test_state_quota_defaults_to_16_mib_and_must_be_positive(tmp_path):
    agent = runtime(tmp_path, '[[plugins]]\nname = "keeper"\nstateQuotaBytes = 0\n', "list-dir = true\n")
    local_plugin(agent, "keeper", STATEFUL)
    assert errors(agent) == [
        "../../config/plugins.toml:3: 'plugins[0].stateQuotaBytes' must be a whole number >= 1, not 0"
    ]
