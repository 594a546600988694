"""agent.context(): the opened files and pinned sections exactly as the model would see them (§7.2)."""

from __future__ import annotations

import pytest

import cireil
from cireil.render.opened_files import context_bundle
from readtools import reading_agent

DOC = "/workspace/long.md"


@pytest.fixture
def agent(tmp_path):
    return cireil.load(reading_agent(tmp_path))


def test_nothing_open_means_no_message(agent):
    ctx = agent.context()
    assert ctx.text == "" and ctx.files == [] and ctx.notes == []
    assert "no files are open" in context_bundle(ctx)["text/plain"]


def test_whole_file_and_sections_in_opening_and_activation_order(agent):
    agent.call("open-file", path="/workspace/hello.txt")
    agent.call("open-file", path=DOC, sections=["setup-1", "setup"])
    size = (agent.directory / "workspace" / "long.md").stat().st_size
    expected = (
        "<opened_files>\n"
        "These are your currently open files:\n"
        "\n"
        '<file path="/workspace/hello.txt" size="6">\n'
        "hello\n"
        "\n"
        "</file>\n"
        "\n"
        f'<file path="{DOC}" size="{size}" sections="setup-1, setup">\n'
        '<section id="setup-1">\n'
        "## Setup\n"
        "\n"
        "Second setup.\n"
        "</section>\n"
        "\n"
        '<section id="setup">\n'
        "## Setup\n"
        "\n"
        "Setup text.\n"
        "\n"
        "### Install\n"
        "\n"
        "Install text.\n"
        "</section>\n"
        "\n"
        "</file>\n"
        "\n"
        "</opened_files>"
    )
    assert agent.context().text == expected
    assert str(agent.context()) == expected


def test_a_stale_section_says_not_found(agent):
    agent.call("open-file", path=DOC, sections=["install", "usage"])
    path = agent.directory / "workspace" / "long.md"
    path.write_text(path.read_text().replace("### Install", "### Installation"))
    ctx = agent.context()
    assert '<section id="install">\n[Section "install" not found.' in ctx.text
    assert "stale" in ctx.text and "read the file again" in ctx.text
    assert "## Usage" in ctx.text
    assert ctx.files[0]["missing"] == ["install"]
    assert "stale: /workspace/long.md pins install" in context_bundle(ctx)["text/plain"]


def test_setext_and_linked_headings_render(agent):
    body = "Title\n=====\n\nintro\n\nPart [one](http://example.org)\n---------\n\npart text\n"
    (agent.directory / "workspace" / "setext.md").write_text(body + ("filler line\n" * 600))
    res = agent.call("open-file", path="/workspace/setext.md", sections=["part-one"])
    assert res.success, res.data
    assert (
        '<section id="part-one">\nPart [one](http://example.org)\n---------\n\npart text\nfiller line'
        in agent.context().text
    )


def test_crlf_file_sections_render_at_the_right_lines(agent):
    text = "# A\r\n\r\nalpha\r\n\r\n# B\r\n\r\nbeta\r\n" + "x\r\n" * 3000
    (agent.directory / "workspace" / "crlf.md").write_bytes(text.encode())
    agent.call("open-file", path="/workspace/crlf.md", sections=["a"])
    assert '<section id="a">\n# A\n\nalpha\n</section>' in agent.context().text


def test_a_deleted_file_is_reported_and_left_out(agent):
    agent.call("open-file", path="/workspace/hello.txt")
    agent.call("open-file", path=DOC)
    (agent.directory / "workspace" / "hello.txt").unlink()
    ctx = agent.context()
    assert ctx.notes == ["File /workspace/hello.txt moved/deleted while still open. Automatically closed."]
    assert "hello.txt" not in ctx.text and f'<file path="{DOC}"' in ctx.text
    assert agent.session.opened_files == ["/workspace/hello.txt", DOC]  # looking changes nothing


def test_close_missing_closes_like_a_model_call(agent):
    from cireil.runtime.engine.opened_files import opened_files_context
    from cireil.runtime.files.paths import SandboxPaths

    agent.call("open-file", path="/workspace/hello.txt")
    (agent.directory / "workspace" / "hello.txt").unlink()
    opened_files_context(agent.session, SandboxPaths(agent.directory), close_missing=True)
    assert agent.session.opened_files == []


def test_files_under_a_mount_render(tmp_path):
    agent_dir = reading_agent(tmp_path)
    source = tmp_path / "shared"
    source.mkdir()
    (source / "doc.txt").write_text("mounted\n")
    (agent_dir / "config" / "sandbox.toml").write_text(
        f'[[mounts]]\nsource = "{source}"\ntarget = "shared"\nmode = "ro"\n'
    )
    agent = cireil.load(agent_dir)
    agent.call("open-file", path="/workspace/shared/doc.txt")
    assert '<file path="/workspace/shared/doc.txt" size="8">\nmounted\n' in agent.context().text
