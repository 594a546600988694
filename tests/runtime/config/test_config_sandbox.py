"""config/sandbox.toml validation: backend, binaries, devices and mounts."""

from __future__ import annotations

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from cireil.runtime.config.sandbox_config import Mount, SandboxConfig, parse_sandbox_config
from cireil.runtime.config.tomlsource import TomlSource
from conftest import make_agent


def parse(text: str, slug: str = "agent"):
    return parse_sandbox_config(TomlSource.parse("config/sandbox.toml", text), slug)


def messages(text: str) -> list[str]:
    return [str(i) for i in parse(text)[1] if i.severity == "error"]


def mount(source: str, target: str, mode: str = "ro") -> str:
    return f'[[mounts]]\nsource = "{source}"\ntarget = "{target}"\nmode = "{mode}"\n'


def test_missing_file_means_defaults(agent_dir):
    assert not (agent_dir / "config" / "sandbox.toml").exists()
    agent = cireil.load(agent_dir)
    assert agent._snapshot.sandbox == SandboxConfig()
    assert parse_sandbox_config(None, "x") == (SandboxConfig(), [])


def test_defaults_and_a_full_valid_file(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    config, issues = parse(
        'backend = "bwrap"\n[bwrap]\nbinaries = ["git", "python3"]\n[devices]\nusb = true\nall = false\n'
        + mount(str(src), "proj", "rw")
        + mount(str(src), "docs/ref", "ro")
    )
    assert issues == []
    assert config.backend == "bwrap"
    assert config.binaries == ("git", "python3")
    assert (config.usb, config.all_devices) == (True, False)
    assert config.mounts == [Mount(src, "proj", "rw"), Mount(src, "docs/ref", "ro")]
    assert [m.read_only for m in config.mounts] == [False, True]


def test_empty_file_is_all_defaults():
    assert parse("") == (SandboxConfig(), [])


def test_backend_none_is_accepted():
    config, issues = parse('backend = "none"\n')
    assert issues == [] and config.backend == "none"


def test_incus_is_refused_as_not_supported():
    [message] = messages('# sandbox\nbackend = "incus"\n[incus]\nimage = "debian"\n')
    assert message.startswith("config/sandbox.toml:2: backend 'incus' is not supported by this runtime")


@pytest.mark.parametrize("value", ['"docker"', "1", '["bwrap"]'])
def test_unknown_backend(value):
    [message] = messages(f"backend = {value}\n")
    assert message.startswith("config/sandbox.toml:1: 'backend' must be one of 'bwrap', 'none', not ")


def test_unknown_top_level_keys():
    assert messages('backend = "bwrap"\nbinaries = ["git"]\n') == [
        "config/sandbox.toml:2: unknown key 'binaries' (expected: backend, bwrap, devices, incus, mounts)"
    ]


def test_bwrap_table_rules():
    assert messages('[bwrap]\nbinaries = ["git"]\nallow = true\n') == [
        "config/sandbox.toml:3: unknown key 'allow' in [bwrap] (expected: binaries)"
    ]
    assert messages('[bwrap]\nbinaries = "git"\n') == [
        "config/sandbox.toml:2: 'bwrap.binaries' must be an array of binary names, not \"git\""
    ]
    assert messages('bwrap = "git"\n') == ["config/sandbox.toml:1: 'bwrap' must be a table, not \"git\""]
    found = messages('[bwrap]\n\nbinaries = ["git", "", " ", "a b", 3]\n')
    assert found == [
        'config/sandbox.toml:3: \'bwrap.binaries\' must hold non-empty words, not "", " ", "a b", 3',
    ]


def test_devices_rules():
    assert parse("[devices]\nall = true\n")[0].all_devices is True
    assert messages('[devices]\nusb = "yes"\ngpu = true\n') == [
        "config/sandbox.toml:2: 'devices.usb' must be true or false, not \"yes\"",
        "config/sandbox.toml:3: unknown key 'gpu' in [devices] (expected: usb, all)",
    ]
    assert messages("devices = 1\n") == ["config/sandbox.toml:1: 'devices' must be a table, not 1"]


# -- mounts --------------------------------------------------------------------------------------


def test_mount_source_absolute_or_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    config, issues = parse(mount("~/data", "d"))
    assert issues == []
    assert config.mounts[0].source == home / "data"
    for bad in ("relative/dir", "~", "~other/x", "./x"):
        assert messages(mount(bad, "d")) == [
            "config/sandbox.toml:2: 'mounts[0].source' must be absolute or start with '~/'"
        ]


def test_mount_source_required():
    assert messages('[[mounts]]\ntarget = "d"\nmode = "ro"\n') == [
        "config/sandbox.toml:1: 'mounts[0].source' is required"
    ]
    assert messages(mount("", "d")) == ["config/sandbox.toml:2: 'mounts[0].source' must be a host path, not \"\""]


def test_missing_mount_source_is_only_a_warning(tmp_path):
    config, issues = parse(mount(str(tmp_path / "nope"), "d"))
    assert [i.severity for i in issues] == ["warning"]
    assert str(issues[0]) == f"config/sandbox.toml:2: warning: 'mounts[0].source' '{tmp_path / 'nope'}' does not exist"
    assert len(config.mounts) == 1


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("/abs", "must be relative (it appears under /workspace/), without a leading '/'"),
        ("..", "must be a plain relative path"),
        ("a/../b", "must be a plain relative path"),
        ("a/..", "must be a plain relative path"),
        ("./a", "must be a plain relative path"),
        ("a//b", "must be a plain relative path"),
        ("a/", "must be a plain relative path"),
    ],
)
def test_mount_target_rules(tmp_path, target, why):
    [message] = messages(mount(str(tmp_path), target))
    assert message.startswith(f"config/sandbox.toml:3: 'mounts[0].target' {why}")
    assert f', not "{target}"' in message


def test_mount_target_and_mode_required():
    assert messages('[[mounts]]\nsource = "/tmp"\nmode = "ro"\n') == [
        "config/sandbox.toml:1: 'mounts[0].target' is required"
    ]
    assert messages('[[mounts]]\nsource = "/tmp"\ntarget = "t"\n') == [
        "config/sandbox.toml:1: 'mounts[0].mode' is required"
    ]
    assert messages(mount("/tmp", "t", "rx")) == [
        "config/sandbox.toml:4: 'mounts[0].mode' must be one of 'ro', 'rw', not \"rx\""
    ]


def test_mount_unknown_keys():
    assert messages(mount("/tmp", "t") + 'options = "nosuid"\n') == [
        "config/sandbox.toml:5: unknown key 'options' in mounts[0] (expected: source, target, mode)"
    ]


def test_mounts_shape_errors():
    assert messages('mounts = "x"\n') == [
        "config/sandbox.toml:1: 'mounts' must be an array of tables ([[mounts]]), not \"x\""
    ]
    assert messages("mounts = [1]\n") == ["config/sandbox.toml:1: 'mounts[0]' must be a table, not 1"]


def test_duplicate_target_names_the_second_mount(tmp_path):
    text = mount(str(tmp_path), "data") + mount(str(tmp_path), "other") + mount(str(tmp_path), "data")
    assert messages(text) == ["config/sandbox.toml:11: Duplicate mount target 'data' in sandbox.toml for agent 'agent'"]


def test_identical_mounts_are_reported_on_the_second(tmp_path):
    text = mount(str(tmp_path), "data") + mount(str(tmp_path), "data")
    assert messages(text) == ["config/sandbox.toml:7: Duplicate mount target 'data' in sandbox.toml for agent 'agent'"]


def test_overlapping_targets(tmp_path):
    text = mount(str(tmp_path), "data") + mount(str(tmp_path), "data/sub")
    assert messages(text) == [
        "config/sandbox.toml:7: Overlapping mount targets 'data' and 'data/sub' in sandbox.toml for agent 'agent'"
    ]
    # A shared prefix that is not a path prefix is no overlap.
    assert messages(mount(str(tmp_path), "data") + mount(str(tmp_path), "database")) == []


def test_overlap_line_is_right_when_an_earlier_mount_is_invalid(tmp_path):
    text = mount("relative", "bad") + mount(str(tmp_path), "data") + mount(str(tmp_path), "data")
    assert messages(text) == [
        "config/sandbox.toml:2: 'mounts[0].source' must be absolute or start with '~/'",
        "config/sandbox.toml:11: Duplicate mount target 'data' in sandbox.toml for agent 'agent'",
    ]


def test_sandbox_errors_fail_loading_with_file_and_line(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "sandbox.toml").write_text('backend = "bwrap"\n\n[bwrap]\nbinaries = [""]\n')
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    assert str(info.value) == "config/sandbox.toml:4: 'bwrap.binaries' must hold non-empty words, not \"\""


def test_sandbox_syntax_error_has_a_line(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "config" / "sandbox.toml").write_text('backend = "bwrap"\n[bwrap\n')
    [issue] = cireil.dry_run(agent).errors
    assert (issue.file, issue.line) == ("config/sandbox.toml", 2)
    assert issue.message.startswith("invalid TOML: ")


def test_one_dry_run_reports_errors_of_all_three_files(tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\nreed = true\n")
    (agent / "config" / "sandbox.toml").write_text('backend = "incus"\n')
    (agent / "config" / "mcp.toml").write_text('[servers.docs]\nurl = "ftp://example.com"\n')
    report = cireil.dry_run(agent)
    files = {i.file for i in report.errors}
    assert files == {"config/tools.toml", "config/sandbox.toml", "config/mcp.toml"}
    assert "config/tools.toml:2: unknown tool 'reed' (did you mean 'read'?)" in [str(i) for i in report.errors]
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    text = str(info.value)
    assert "config/tools.toml:2:" in text
    assert "config/sandbox.toml:1:" in text
    assert "config/mcp.toml:2:" in text


def test_syntax_errors_in_two_files_are_both_reported(tmp_path):
    agent = make_agent(tmp_path, "list-dir = \n")
    (agent / "config" / "sandbox.toml").write_text("backend = = 1\n")
    report = cireil.dry_run(agent)
    assert sorted((i.file, i.line) for i in report.errors) == [("config/sandbox.toml", 1), ("config/tools.toml", 1)]
