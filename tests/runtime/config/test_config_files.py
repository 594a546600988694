"""Configuration files that are not regular files, or absurdly large: a clear `FILE: ...` error, at once.

A directory or FIFO under a config name used to raise a traceback or hang dry-run and load (a FIFO
read blocks until someone writes to it). Each case runs in a child process with a deadline, so a
hang fails the test instead of stalling the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import make_agent

PROBE = """\
import json, sys
import cireil
from cireil.runtime.base.errors import ConfigError
report = cireil.dry_run(sys.argv[1])
try:
    cireil.load(sys.argv[1]).close()
    loaded = None
except ConfigError as exc:
    loaded = str(exc)
print(json.dumps({"errors": [str(i) for i in report.errors], "warnings": [str(i) for i in report.warnings],
                  "load": loaded}))
"""


def probe(agent: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(agent)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def replace_with(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "directory":
        path.mkdir()
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind", ["directory", "fifo"])
@pytest.mark.parametrize("rel", ["config/tools.toml", "config/sandbox.toml", "config/mcp.toml"])
def test_a_config_file_that_is_not_a_regular_file_is_a_clear_error(tmp_path, rel, kind):
    agent = make_agent(tmp_path)
    target = agent / rel
    if not target.exists():
        target.write_text("")
    replace_with(target, kind)
    result = probe(agent)
    expected = f"{rel}: not a regular file"
    assert any(e.startswith(expected) for e in result["errors"]), result
    assert result["load"] is not None and expected in result["load"]
    assert "Traceback" not in result["load"]


def test_engine_toml_as_a_fifo_fails_the_turn_config_not_the_kernel(tmp_path):
    from cireil.runtime.base.errors import ConfigError
    from cireil.runtime.config.engine_config import load_engine_config

    agent = make_agent(tmp_path)
    replace_with(agent / "config" / "engine.toml", "fifo")
    with pytest.raises(ConfigError, match=r"config/engine.toml: not a regular file"):
        load_engine_config(agent)


def test_an_oversized_config_file_is_refused_by_size(tmp_path):
    agent = make_agent(tmp_path)
    with open(agent / "config" / "sandbox.toml", "w") as f:
        f.write("# padding\n" * 200_000)  # 2 MB of comments: valid TOML, but no configuration is this big
    result = probe(agent)
    assert any(e.startswith("config/sandbox.toml: file is larger than") for e in result["errors"]), result


def test_a_skill_or_block_that_is_a_fifo_is_a_warning_not_a_hang(tmp_path):
    agent = make_agent(tmp_path)
    replace_with(agent / "skills" / "notes" / "SKILL.md", "fifo")
    replace_with(agent / "blocks" / "soul.md", "fifo")
    result = probe(agent)
    assert result["load"] is None
    text = json.dumps(result["warnings"])
    assert "skills/notes/SKILL.md" in text and "blocks/soul.md" in text and "not a regular file" in text


def test_the_system_prompt_skips_a_fifo_skill_at_once(tmp_path):
    from cireil.runtime.engine.prompt import _skill_fields

    agent = make_agent(tmp_path)
    replace_with(agent / "skills" / "notes" / "SKILL.md", "fifo")
    assert "not a regular file" in str(_skill_fields(agent, agent / "skills" / "notes" / "SKILL.md"))


REFRESH = """\
import sys
import cireil
from cireil.runtime.base.errors import ConfigError
agent = cireil.load(sys.argv[1])
import os
os.unlink(sys.argv[1] + "/config/tools.toml")
os.mkfifo(sys.argv[1] + "/config/tools.toml")
try:
    agent.call("list-dir", path="/workspace")
    print("no error")
except ConfigError as exc:
    print(exc)
"""


def test_a_config_file_turned_into_a_fifo_after_load_fails_the_next_call_at_once(tmp_path):
    agent = make_agent(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", REFRESH, str(agent)], capture_output=True, text=True, timeout=60, check=False
    )
    assert "config/tools.toml: not a regular file" in done.stdout, done.stdout + done.stderr
