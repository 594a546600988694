"""open-file, read-sections, close-file and read-skill: session state and its rules (reference §4.4–4.7)."""

from __future__ import annotations

import pytest

import cireil
from readtools import reading_agent

DOC = "/workspace/long.md"


@pytest.fixture
def agent(tmp_path):
    return cireil.load(reading_agent(tmp_path))


def state(agent) -> tuple[list[str], dict]:
    return list(agent.session.opened_files), {k: list(v) for k, v in agent.session.active_sections.items()}


def test_open_whole_file(agent):
    res = agent.call("open-file", path=DOC)
    assert res.data == {"open": [DOC], "path": DOC, "success": True}
    assert state(agent) == ([DOC], {})


def test_open_sections_replaces_the_active_set_in_the_given_order(agent):
    agent.call("open-file", path=DOC, sections=["usage"])
    res = agent.call("open-file", path=DOC, sections=["setup-1", "install", "setup-1"])
    assert res.data == {"activeSections": ["setup-1", "install"], "open": [DOC], "path": DOC, "success": True}
    assert state(agent) == ([DOC], {DOC: ["setup-1", "install"]})


def test_unknown_sections_are_rejected_before_anything_changes(agent):
    res = agent.call("open-file", path=DOC, sections=["usage", "nope", "also-nope"])
    assert not res.success
    assert res.data["error"].startswith("Unknown section(s): nope, also-nope. Available sections: guide, setup,")
    assert state(agent) == ([], {})
    agent.call("open-file", path=DOC, sections=["usage"])
    agent.call("open-file", path=DOC, sections=["nope"])
    assert state(agent) == ([DOC], {DOC: ["usage"]})


def test_all_pins_every_section_and_is_exclusive(agent):
    res = agent.call("open-file", path=DOC, all=True)
    assert res.data["activeSections"] == ["guide", "setup", "install", "usage", "setup-1"]
    for extra in ({"sections": ["usage"]}, {"closeSections": ["usage"]}):
        res = agent.call("open-file", path=DOC, all=True, **extra)
        assert "mutually exclusive" in res.data["error"]


def test_sections_of_a_file_without_outline_pin_the_whole_file(agent):
    res = agent.call("open-file", path="/workspace/hello.txt", sections=["anything"])
    assert res.success and "activeSections" not in res.data
    assert state(agent) == (["/workspace/hello.txt"], {})


def test_close_sections_unpins_and_keeps_the_file_open(agent):
    agent.call("open-file", path=DOC, sections=["setup", "usage"])
    res = agent.call("open-file", path=DOC, closeSections=["setup"])
    assert res.data == {"activeSections": ["usage"], "path": DOC, "success": True}
    res = agent.call("open-file", path=DOC, closeSections=["usage"])
    assert res.data["activeSections"] == [] and state(agent) == ([DOC], {})
    res = agent.call("open-file", path=DOC, closeSections=["not-a-section"])
    assert not res.success and state(agent) == ([DOC], {})


def test_open_file_refuses_directories_missing_files_and_hostile_paths(agent):
    assert (
        agent.call("open-file", path="/workspace/docs").data["error"] == "Path is a directory or not a standard file."
    )
    assert agent.call("open-file", path="/workspace/none.md").data["error"].startswith("ENOENT")
    for path in ("/workspace/../../etc/passwd", "/etc/hosts", "relative.md"):
        assert agent.call("open-file", path=path).data["error"].startswith("Access denied")
    assert state(agent) == ([], {})


def test_paths_are_normalized_so_one_file_is_opened_once(agent):
    agent.call("open-file", path=DOC)
    res = agent.call("open-file", path="/workspace/./docs/../long.md")
    assert res.data["open"] == [DOC]


def test_read_sections_adds_without_duplicates(agent):
    agent.call("open-file", path=DOC, sections=["setup"])
    res = agent.call("read-sections", path=DOC, sections=["usage", "setup"])
    assert res.data["added"] == ["usage"] and res.data["activeSections"] == ["setup", "usage"]
    res = agent.call("read-sections", path=DOC, sections=["usage"])
    assert res.data["added"] == [] and res.data["message"] == "All sections are already active."
    res = agent.call("read-sections", path=DOC, all=True)
    assert res.data["activeSections"] == ["setup", "usage", "guide", "install", "setup-1"]


def test_read_sections_rules(agent):
    res = agent.call("read-sections", path=DOC, sections=["usage"])
    assert res.data == {"error": f"File '{DOC}' is not open. Use 'open-file' first.", "path": DOC, "success": False}
    agent.call("open-file", path=DOC)
    assert "mutually exclusive" in agent.call("read-sections", path=DOC, all=True, sections=["x"]).data["error"]
    assert "Either" in agent.call("read-sections", path=DOC).data["error"]
    res = agent.call("read-sections", path=DOC, sections=["usage", "bogus"])
    assert res.data["error"].startswith("Unknown section(s): bogus.") and state(agent) == ([DOC], {})
    agent.call("open-file", path="/workspace/hello.txt")
    res = agent.call("read-sections", path="/workspace/hello.txt", all=True)
    assert "below the outline threshold" in res.data["message"]


def test_close_file(agent):
    agent.call("open-file", path=DOC, sections=["usage"])
    agent.call("open-file", path="/workspace/hello.txt")
    res = agent.call("close-file", path=DOC)
    assert res.data == {"open": ["/workspace/hello.txt"], "path": DOC, "removed": True, "success": True}
    assert state(agent) == (["/workspace/hello.txt"], {})
    assert agent.call("close-file", path=DOC).data["removed"] is False


def test_close_file_works_for_a_file_that_is_gone(agent):
    agent.call("open-file", path=DOC)
    (agent.directory / "workspace" / "long.md").unlink()
    assert agent.call("close-file", path=DOC).data["removed"] is True


def test_a_write_makes_the_file_render_whole_again(agent):
    agent.call("open-file", path=DOC, sections=["usage"])
    agent.call("write", path=DOC, content="# New\n")
    assert state(agent) == ([DOC], {})


def test_read_skill(agent):
    res = agent.call("read-skill", slug="notes")
    assert res.data["content"].startswith("---\nname: notes\n") and res.data["slug"] == "notes"
    res = agent.call("read-skill", slug="missing")
    assert res.data["error"] == "ENOENT: no such file or directory, open '/skills/missing/SKILL.md'"
    for slug in ("../blocks", "../../..", "notes/../../blocks"):
        res = agent.call("read-skill", slug=slug)
        assert res.data["error"].startswith("Access denied"), slug
        assert str(agent.directory) not in res.data["error"]


def test_read_skill_with_broken_frontmatter_is_still_readable(agent):
    (agent.directory / "skills" / "notes" / "SKILL.md").write_text("no frontmatter\n")
    assert agent.call("read-skill", slug="notes").data["content"] == "no frontmatter\n"


@pytest.mark.parametrize("path", ["/workspace/../../etc/passwd", "/etc/passwd", "long.md", "/blocks/../../x"])
def test_read_sections_refuses_hostile_paths(agent, path):
    res = agent.call("read-sections", path=path, all=True)
    assert res.data["error"].startswith("Access denied") and str(agent.directory) not in res.data["error"]
