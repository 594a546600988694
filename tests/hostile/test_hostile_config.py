"""Hostile configuration files: every error names the file (and line), none is a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.errors import ConfigError
from conftest import make_agent

DEEP = "[" * 100_000 + "]" * 100_000


def errors(agent: Path) -> list[str]:
    return [str(i) for i in cireil.dry_run(agent).errors]


def load_message(agent: Path) -> str:
    with pytest.raises(ConfigError) as info:
        cireil.load(agent)
    return str(info.value)


@pytest.mark.parametrize("rel", ["config/tools.toml", "config/mcp.toml", "config/sandbox.toml"])
def test_a_depth_bomb_in_a_toml_file_is_a_file_line_error(tmp_path, rel):
    agent = make_agent(tmp_path)
    path = agent / rel
    before = path.read_text() if path.exists() else ""
    path.write_text(before + f"# a comment\nbomb = {DEEP}\n")
    line = before.count("\n") + 2
    expected = f"{rel}:{line}: invalid TOML: arrays or inline tables nested too deeply to read"
    assert errors(agent) == [expected]
    assert expected in load_message(agent)


def test_a_depth_bomb_in_block_frontmatter_names_the_block(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "blocks" / "soul.md").write_text(f'+++\ndescription = "x"\nbomb = {DEEP}\n+++\nbody\n')
    found = [str(i) for i in cireil.dry_run(agent).issues]  # a warning, as any bad block frontmatter is
    assert found == [
        "blocks/soul.md:1: warning: invalid frontmatter: TOML parse error: "
        "arrays or inline tables nested too deeply to read"
    ]


def test_a_depth_bomb_in_skill_frontmatter_names_the_skill(tmp_path):
    agent = make_agent(tmp_path)
    (agent / "skills" / "notes" / "SKILL.md").write_text(f"---\nname: notes\ndescription: x\nbomb: {DEEP}\n---\n")
    found = [str(i) for i in cireil.dry_run(agent).issues]
    assert any(m.startswith("skills/notes/SKILL.md") and "nested too deeply" in m for m in found), found


def test_dotted_unknown_keys_in_tools_toml_get_file_and_line(tmp_path):
    agent = make_agent(tmp_path, "list-dir = true\n# dotted\nnot-a-tool.enabled = true\nexec.bogus = 1\n")
    found = errors(agent)
    assert "config/tools.toml:3: unknown tool 'not-a-tool'" in found
    assert any(m.startswith("config/tools.toml:4: unknown key 'bogus' in [exec]") for m in found), found
    agent2 = make_agent(tmp_path / "b", "list-dir = true\n\n[deep.er.table]\nx = 1\n")
    assert errors(agent2) == ["config/tools.toml:3: unknown tool 'deep'"]


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[::1/mcp", "cannot be parsed (Invalid IPv6 URL)"),
        ("http://[fe80::zz]/mcp", "cannot be parsed"),
        ("http://127.0.0.1:65536/mcp", "has port '65536', not a number from 0 to 65535"),
        ("http://127.0.0.1:99999999999/mcp", "has port '99999999999'"),
        ("http://127.0.0.1:8080/mcp\\r\\nX-Injected: 1", "contains a carriage return (CR)"),
        ("http://127.0.0.1:8080/mcp\\nX: 1", "contains a line feed (LF)"),
        ("http://exa mple.com/mcp", "contains a space"),
    ],
)
def test_unusable_mcp_urls_are_load_errors_with_file_line(tmp_path, url, reason):
    agent = make_agent(tmp_path)
    (agent / "config" / "mcp.toml").write_text(f'# servers\n[servers.docs]\nurl = "{url}"\n')
    found = errors(agent)
    assert len(found) == 1 and found[0].startswith("config/mcp.toml:3: 'servers.docs.url' "), found
    assert reason in found[0]
    assert found[0] in load_message(agent)


def test_a_good_ipv6_mcp_url_is_accepted_by_the_config():
    from cireil.runtime.config.urlcheck import url_problem

    assert url_problem("http://[::1]:8080/mcp") is None
    assert url_problem("https://example.com/mcp") is None


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("/etc/spill", "must be under /workspace, /memories, /blocks, /skills, /tasks"),
        ("/tmp", "must be under"),
        ("/workspace/../../etc", "must be under"),
        ("/workspace/../memories/x", "leaves /workspace by '..'"),
        ("/", "must be under"),
    ],
)
def test_an_exec_output_dir_outside_the_sandbox_is_a_load_error(tmp_path, value, why):
    agent = make_agent(tmp_path, f'list-dir = true\n[exec]\nenabled = false\noutputDir = "{value}"\n')
    (found,) = errors(agent)
    assert found.startswith(f"config/tools.toml:4: 'exec.outputDir' {why}")
    assert found.endswith(f"not {value!r}: spill files must land inside the sandbox")


def test_exec_output_dirs_inside_the_sandbox_are_fine(tmp_path):
    for value in ("/workspace/out", "/memories/x", "/workspace/./a/../b"):
        agent = make_agent(tmp_path / value.replace("/", "_"), f'list-dir = true\n[exec]\noutputDir = "{value}"\n')
        assert errors(agent) == []
