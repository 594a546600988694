"""What a newcomer reads: help, the tools table, dry-run, notices and the load message."""

from __future__ import annotations

import cireil
from cireil.kernel.views.panels import DryRunView, ToolTable
from cireil.render.chat import notice_line
from cireil.render.html import notices_html


def test_tools_table_keeps_names_and_origins_on_one_line(agent_dir):
    agent = cireil.load(agent_dir)
    html = ToolTable(agent.slug, agent.tools, {}).html()
    # the name with its magic under it, and the origin (issue 34: the magic left its own column to the description)
    assert html.count("white-space:nowrap") == 2 * len(agent.tools)


def test_dry_run_says_valid_briefly(agent_dir):
    html = DryRunView(cireil.load(agent_dir).dry_run()).html()
    assert "✓ valid</span>" in html and ">valid: tools" not in html
    assert "tools enabled: list-dir" in html


def test_notices_use_an_icon_every_font_can_draw():
    for html in (notices_html(["hello"]), notice_line("hello")[1]):
        assert "ⓘ" not in html and 'aria-label="note"' in html
    assert notice_line("hello")[0] == "note: hello"


def test_session_card_rows_all_read_from_the_left(agent_dir):
    import re

    from cireil.kernel.views.panels import SessionCard

    agent = cireil.load(agent_dir)
    agent.session.last_activity = "2026-12-03T08:00:00.000Z"
    html = SessionCard(agent.slug, agent.session).html()
    cells = re.findall(r"<td style=\"([^\"]*)\"", html)
    assert cells and all("text-align:left" in c for c in cells)
    assert "last message" in html
