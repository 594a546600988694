"""Size bounds: open-file and read-sections share read's 256 KiB limit; the context never carries a huge file."""

from __future__ import annotations

import pytest

import cireil
from cireil.runtime.textfile import READ_LIMIT
from readtools import reading_agent

BIG = "/workspace/big.md"


@pytest.fixture
def agent(tmp_path):
    root = reading_agent(tmp_path)
    (root / "workspace" / "big.md").write_text(("# Head\n\n" + "x" * 1000 + "\n") * 2000)  # ~2 MB
    a = cireil.load(root)
    yield a
    a.close()


def test_open_file_refuses_a_file_over_the_read_limit(agent):
    for args in ({"path": BIG}, {"path": BIG, "all": True}, {"path": BIG, "sections": ["head"]}):
        result = agent.call("open-file", args)
        assert not result.success
        assert f"over the {READ_LIMIT}-byte limit (256 KiB)" in result["error"] and result["hint"]
    assert agent.session.opened_files == []


def test_read_sections_refuses_a_file_that_grew_past_the_limit(agent):
    path = "/workspace/long.md"
    assert agent.call("open-file", path=path).success
    host = agent.directory / "workspace" / "long.md"
    host.write_text(host.read_text() * 200)  # now well over 256 KiB
    result = agent.call("read-sections", path=path, all=True)
    assert not result.success and "read-sections does not pin or show it" in result["error"]
    context = str(agent.context())
    assert len(context) < 10_000  # the grown file is not sent with every model call
    assert f'<file path="{path}"' in context and "over the 262144-byte limit" in context
    host.write_text("# Small again\n")
    assert "# Small again" in str(agent.context())
