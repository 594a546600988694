"""Rendering tool results: every bundle complete, JSON untouched, HTML safe and scoped."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser

import pytest

import cireil
from cireil.render import result_bundle
from cireil.runtime.toolkit.result import ToolResult

HOSTILE = "<img src=x onerror=alert(1)>.txt"
SCRIPT = "<script>alert('x')</script>"


def bundle_of(result: ToolResult) -> dict:
    before = copy.deepcopy(result.data)
    bundle = result_bundle(result)
    assert result.data == before, "rendering changed the result"
    assert set(bundle) == {"text/plain", "text/html", "application/vnd.cireil.result+json"}
    assert bundle["application/vnd.cireil.result+json"] == before
    json.dumps(bundle["application/vnd.cireil.result+json"])
    assert isinstance(bundle["text/plain"], str) and bundle["text/plain"]
    html = bundle["text/html"]
    assert not re.search(r"<\s*script", html, re.I), html
    assert not re.search(r"<\s*style", html, re.I), html
    tags = Tags()
    tags.feed(html)
    tags.close()
    assert not tags.bad, tags.bad
    return bundle


class Tags(HTMLParser):
    """Collects what a browser would treat as markup: dangerous tags and event-handler attributes."""

    SAFE = frozenset(
        {
            "div",
            "span",
            "table",
            "tbody",
            "thead",
            "tr",
            "td",
            "th",
            "code",
            "pre",
            "ul",
            "li",
            "b",
            "details",
            "summary",
        }
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.SAFE:
            self.bad.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or (value and "javascript:" in value.lower()):
                self.bad.append(f"{tag}[{name}]")


def make(tool: str, data: dict, notices=()) -> ToolResult:
    return ToolResult(tool, {}, data, 0.01, list(notices))


@pytest.fixture
def agent(agent_dir):
    (agent_dir / "workspace" / HOSTILE).write_text("x")
    (agent_dir / "workspace" / "link").symlink_to("docs")
    return cireil.load(agent_dir)


def test_list_dir_table(agent):
    result = agent.call("list-dir", path="/workspace")
    bundle = bundle_of(result)
    assert bundle["application/vnd.cireil.result+json"] is result.data
    text = bundle["text/plain"]
    assert text.splitlines()[0] == "/workspace  (4 entries)"
    assert "  docs/" in text and "  link@" in text and "  hello.txt" in text
    assert f"  {HOSTILE}" in text  # plain text shows the real name
    html = bundle["text/html"]
    assert "<table" in html
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in html
    assert "<img" not in html


def test_list_dir_empty(agent):
    bundle = bundle_of(agent.call("list-dir", path="/memories"))
    assert "(empty)" in bundle["text/plain"]
    assert "(empty)" in bundle["text/html"]
    assert "(0 entries)" in bundle["text/plain"]


def test_list_dir_single_entry_wording():
    bundle = bundle_of(make("list-dir", {"entries": [{"name": "a", "type": "file"}], "path": "/x", "success": True}))
    assert "(1 entry)" in bundle["text/plain"]


def test_session_info_card(agent):
    bundle = bundle_of(agent.call("session-info"))
    assert "platform: remote" in bundle["text/plain"]
    assert "session_id: notebook:main" in bundle["text/plain"]
    assert "notebook:main" in bundle["text/html"]
    hostile = bundle_of(make("session-info", {"platform": "remote", "session_id": SCRIPT, "success": True}))
    assert "&lt;script&gt;" in hostile["text/html"]


def test_write_view(agent):
    result = agent.call("write", path="/workspace/new.txt", content="hé")
    bundle = bundle_of(result)
    assert bundle["text/plain"] == "wrote /workspace/new.txt (content: 3 bytes)"
    assert "/workspace/new.txt" in bundle["text/html"]
    hostile = bundle_of(agent.call("write", path=f"/workspace/{HOSTILE}", content=""))
    assert "&lt;img src=x onerror=alert(1)&gt;.txt" in hostile["text/html"]


def test_generic_view_for_other_tools():
    bundle = bundle_of(make("probe", {"value": [1, 2], "success": True}))
    assert json.loads(bundle["text/plain"]) == {"value": [1, 2], "success": True}
    assert "probe" in bundle["text/html"]


def test_generic_view_escapes_tool_name_and_values():
    result = make(SCRIPT, {"value": SCRIPT, "success": True})
    bundle = bundle_of(result)
    assert "&lt;script&gt;" in bundle["text/html"]


def test_results_without_success_render_as_success():
    bundle = bundle_of(make("schedule", {"scheduled": True}))
    assert "failed" not in bundle["text/plain"]


def test_parameter_error(agent):
    result = agent.call("write", path="/blocks/x.txt")
    assert result.data["issues"] and len(result.data["issues"]) == 2
    bundle = bundle_of(result)
    text = bundle["text/plain"]
    assert text.startswith("write failed: ")
    assert "  - path: Files in /blocks/ must end with .md extension" in text
    assert '  - content: Invalid key: Expected "content" but received undefined' in text
    html = bundle["text/html"]
    assert "write failed" in html
    assert "Files in /blocks/ must end with .md extension" in html
    assert "<code>content</code>" in html
    assert "Invalid key: Expected &quot;content&quot; but received undefined" in html


def test_single_issue_error_shows_its_message(agent):
    bundle = bundle_of(agent.call("list-dir"))
    assert 'path: Invalid key: Expected "path" but received undefined' in bundle["text/plain"]
    assert "Expected &quot;path&quot;" in bundle["text/html"]


def test_tool_error_with_hint(agent):
    result = agent.call("list-dir", path="/workspace/hello.txt")
    bundle = bundle_of(result)
    assert bundle["text/plain"].splitlines() == [
        "list-dir failed: '/workspace/hello.txt' is not a directory.",
        "hint: Use read to look at a file.",
    ]
    html = bundle["text/html"]
    assert "is not a directory." in html
    assert "Use read to look at a file." in html


def test_access_denied_error(agent):
    bundle = bundle_of(agent.call("list-dir", path="/workspace/../../etc"))
    assert "Access denied: path &#x27;/workspace/../../etc&#x27; attempts to escape the sandbox." in bundle["text/html"]


def test_hostile_error_hint_and_issue_are_escaped():
    data = {
        "error": SCRIPT,
        "hint": f"<b>{HOSTILE}</b>",
        "issues": [{"message": SCRIPT, "path": "<i>p</i>"}, {"message": "m", "path": ""}],
        "extra": SCRIPT,
        "success": False,
    }
    bundle = bundle_of(make(SCRIPT, data))
    html = bundle["text/html"]
    assert "<b>" not in html and "<i>" not in html and "<img" not in html
    assert "&lt;i&gt;p&lt;/i&gt;" in html
    # unknown extra keys are still shown, as JSON
    assert '"extra"' in bundle["text/plain"]


def test_failure_keeps_extra_fields_visible():
    data = {"entries": [], "error": "use exec ls /bin", "path": "/bin", "success": False}
    bundle = bundle_of(make("list-dir", data))
    assert "list-dir failed: use exec ls /bin" in bundle["text/plain"]
    assert '"path": "/bin"' in bundle["text/plain"]


def test_notices_appear_in_text_and_html(agent_dir):
    loaded = cireil.load(agent_dir)
    (agent_dir / "config" / "tools.toml").write_text("list-dir = true\n")
    result = loaded.call("list-dir", path="/workspace")
    assert result.notices
    bundle = bundle_of(result)
    assert bundle["text/plain"].startswith("note: config/tools.toml changed: enabled tools are now list-dir\n")
    assert "config/tools.toml changed" in bundle["text/html"]
    hostile = bundle_of(make("write", {"path": "/x", "success": True}, notices=[SCRIPT]))
    assert hostile["text/plain"].startswith(f"note: {SCRIPT}")
    assert "&lt;script&gt;" in hostile["text/html"]


def test_notices_on_errors_too():
    bundle = bundle_of(make("write", {"error": "e", "success": False}, notices=["heads up"]))
    assert bundle["text/plain"].startswith("note: heads up\n")
    assert "heads up" in bundle["text/html"]


def test_a_result_outside_ipython_has_a_plain_repr(agent):
    result = agent.call("session-info")
    assert not hasattr(result, "_repr_mimebundle_")  # IPython shows it through kernel/display.py's printer
    assert repr(result) == "<ToolResult session-info success=True keys=['platform', 'session_id', 'success']>"


def test_html_is_scoped_to_one_element(agent):
    html = bundle_of(agent.call("list-dir", path="/workspace"))["text/html"]
    assert html.startswith('<div class="cireil cireil-list-dir"')
    assert html.endswith("</div>")
