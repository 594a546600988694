"""Inline display of the reading tools: outline tree and actions, numbered and highlighted text,
Markdown source/rendered, media, pinned state, and the context view."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

import cireil
from cireil.render import result_actions, result_bundle
from cireil.render.opened_files import context_bundle
from readtools import PNG, reading_agent

DOC = "/workspace/long.md"


@pytest.fixture
def agent(tmp_path):
    return cireil.load(reading_agent(tmp_path))


def safe(html: str) -> None:
    assert "<script" not in html.lower() and "<style" not in html.lower()


def test_outline_is_a_collapsible_tree_and_an_indented_list(agent):
    bundle = result_bundle(agent.call("read", path=DOC))
    html, text = bundle["text/html"], bundle["text/plain"]
    safe(html)
    assert html.count("<details") >= 2 and "<summary" in html
    assert "setup-1" in html and "lines 5–12" in html and "tok" in html
    lines = text.splitlines()
    guide = next(line for line in lines if "[guide]" in line)
    install = next(line for line in lines if "[install]" in line)
    indent = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    assert indent(install) == indent(guide) + 4  # h1 > h2 > h3
    assert "h3  Install  [install]  lines 9–12" in install


def test_outline_actions_open_the_outer_levels_through_open_file(agent):
    result = agent.call("read", path=DOC)
    offered = result_actions(result)
    assert [a.args["sections"] for a in offered] == [["guide"], ["setup"], ["usage"], ["setup-1"]]
    assert all(a.tool == "open-file" and a.args["path"] == DOC for a in offered)
    opened = agent.call(offered[1].tool, offered[1].args)
    assert opened.data["activeSections"] == ["setup"]
    assert agent.session.active_sections == {DOC: ["setup"]}


def test_many_sections_keep_the_buttons_few(agent):
    text = "".join(f"# Part {i}\n\n## Sub {i}\n\n" + "words " * 15 + "\n\n" for i in range(1000))
    (agent.directory / "workspace" / "huge.md").write_text(text)
    result = agent.call("read", path="/workspace/huge.md")
    assert len(result.data["outline"]["sections"]) == 2000
    assert 0 < len(result_actions(result)) <= 24


def test_no_actions_for_content_or_failures(agent):
    assert result_actions(agent.call("read", path="/workspace/hello.txt")) == []
    assert result_actions(agent.call("read", path="/workspace/nope")) == []


def test_content_has_line_numbers_and_highlighting(agent):
    (agent.directory / "workspace" / "x.py").write_text("def f():\n    return 1  # one\n")
    bundle = result_bundle(agent.call("read", path="/workspace/x.py"))
    safe(bundle["text/html"])
    assert "1 | def f():" in bundle["text/plain"] and "2 |     return 1  # one" in bundle["text/plain"]
    assert re.search(r'<span style="color: #[0-9A-Fa-f]+; font-weight: bold">def</span>', bundle["text/html"])
    assert ">1</span>" in bundle["text/html"] and ">3</span>" in bundle["text/html"]


def test_markdown_toggles_source_and_rendered_with_raw_html_escaped(agent):
    (agent.directory / "workspace" / "m.md").write_text("# Hi\n\n<script>alert(1)</script>\n\n*em*\n")
    html = result_bundle(agent.call("read", path="/workspace/m.md"))["text/html"]
    safe(html)
    assert "<summary" in html and "rendered" in html and "source" in html
    assert "<h1>Hi</h1>" in html and "<em>em</em>" in html
    assert "&lt;script&gt;" in html


def test_image_shows_the_picture_and_video_plays(agent):
    (agent.directory / "workspace" / "p.png").write_bytes(PNG)
    (agent.directory / "workspace" / "v.mp4").write_bytes(b"\0\0\0\x18ftypmp42")
    html = result_bundle(agent.call("read", path="/workspace/p.png"))["text/html"]
    assert '<img src="data:image/png;base64,iVBORw0KGgo' in html
    bundle = result_bundle(agent.call("read", path="/workspace/v.mp4"))
    assert '<video controls src="data:video/mp4;base64,' in bundle["text/html"]
    assert "video (video/mp4" in bundle["text/plain"]


def test_open_file_shows_the_pinned_state(agent):
    bundle = result_bundle(agent.call("open-file", path=DOC, sections=["setup", "usage"]))
    assert "pinned sections: setup, usage" in bundle["text/plain"]
    assert "📌" in bundle["text/html"]
    whole = result_bundle(agent.call("open-file", path="/workspace/hello.txt"))
    assert "pinned: the whole file" in whole["text/plain"]
    offered = result_actions(agent.call("open-file", path=DOC, sections=["setup"]))
    assert [(a.tool, a.args) for a in offered] == [
        ("open-file", {"path": DOC, "closeSections": ["setup"]}),
        ("read", {"path": DOC}),
    ]


def test_other_views(agent):
    agent.call("open-file", path=DOC)
    assert "added: usage" in result_bundle(agent.call("read-sections", path=DOC, sections=["usage"]))["text/plain"]
    assert result_bundle(agent.call("close-file", path=DOC))["text/plain"].startswith(f"closed {DOC}")
    skill = result_bundle(agent.call("read-skill", slug="notes"))
    assert skill["text/plain"].startswith("skill notes — notes: Keep notes tidy.")


def test_context_view(agent):
    agent.call("open-file", path=DOC, sections=["usage"])
    bundle = context_bundle(agent.context())
    safe(bundle["text/html"])
    assert "&lt;opened_files&gt;" in bundle["text/html"] and "sections usage" in bundle["text/html"]
    assert bundle["text/plain"].startswith("<opened_files>")


def test_heavy_imports_wait_until_needed(tmp_path):
    directory = reading_agent(tmp_path)
    code = f"""
import sys, cireil
agent = cireil.load({str(directory)!r})
agent.call("read", path="/workspace/hello.txt")
print("markdown_it" in sys.modules, "pygments" in sys.modules)
agent.call("read", path="/workspace/long.md")
print("markdown_it" in sys.modules, "pygments" in sys.modules)
from cireil.render import result_bundle
from cireil.render.opened_files import context_bundle
result_bundle(agent.call("read", path="/workspace/hello.txt"))
print("pygments" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "True", "False", "True"]
