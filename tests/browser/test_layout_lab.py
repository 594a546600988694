"""Layout in a real JupyterLab (issue 34): the tool table and `%cireil help` size their columns to content and give
descriptions the width left, and the context view wraps at word boundaries, whatever JupyterLab's own table and
<pre> styles say (`table-layout: fixed`, `word-break: break-all`)."""

from __future__ import annotations

from playwright.sync_api import Locator, expect

from .conftest import LAYOUT
from .labpage import WAIT_MS, LabPage
from .test_lab import outputs

_COLUMNS = """t => ({
    table: t.getBoundingClientRect().width,
    room: (p => p.clientWidth - parseFloat(getComputedStyle(p).paddingLeft)
        - parseFloat(getComputedStyle(p).paddingRight))(t.parentElement),
    layout: getComputedStyle(t).tableLayout,
    columns: [...t.querySelector('tbody tr').children].map(c => c.getBoundingClientRect().width),
})"""
# every cell whose text is cut (wider than its box) or whose lines break inside a word
_CUT_CELLS = (
    """t => [...t.querySelectorAll('td')].filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)"""
)


def columns(table: Locator) -> dict:
    return table.evaluate(_COLUMNS)


def test_tool_table_and_help_give_descriptions_the_width_left(lab_page: LabPage, console_errors: list[str]):
    lab_page.open(LAYOUT)
    cell = lab_page.run_through("%cireil tools")
    view = outputs(cell).locator(".cireil-tools")
    table = view.locator("table")
    expect(table).to_be_visible(timeout=WAIT_MS)
    got = columns(table)
    assert got["layout"] == "auto"
    assert got["table"] >= got["room"] - 2, got  # the whole width of the output
    *fixed, description = got["columns"]
    assert description >= 0.4 * got["table"], got  # was ~160 px of 805
    assert description > max(fixed), got
    assert table.evaluate(_CUT_CELLS) == []
    # 20 tools in one screenful or two, not 3,400 px: first paragraphs shown, the rest folded under "more"
    assert table.evaluate("t => t.getBoundingClientRect().height") < 2000
    more = view.locator("details.cireil-more").first
    expect(more.locator("div")).to_be_hidden()
    more.locator("summary").click()
    expect(more.locator("div")).to_be_visible()
    lab_page.shot("tool-table", view)

    cell = lab_page.run_through("%cireil help")
    table = outputs(cell).locator(".cireil-help table")
    expect(table).to_be_visible(timeout=WAIT_MS)
    got = columns(table)
    assert got["layout"] == "auto" and got["table"] >= got["room"] - 2, got
    widths = table.evaluate(
        "t => [...t.querySelectorAll('tbody tr')].map(r => r.children[1].getBoundingClientRect().width)"
    )
    assert min(widths) >= 0.3 * got["table"], got  # descriptions were squeezed to ~200 px beside eval's usage
    assert not console_errors, console_errors


def test_context_view_wraps_at_word_boundaries(lab_page: LabPage, console_errors: list[str]):
    lab_page.open(LAYOUT)
    cell = lab_page.run_through("%cireil context")
    view = outputs(cell).locator(".cireil-context")
    pre = view.locator("pre").first
    expect(pre).to_contain_text("garden-handbook.md", timeout=WAIT_MS)
    style = pre.evaluate("e => [getComputedStyle(e).wordBreak, getComputedStyle(e).overflowWrap]")
    assert style == ["normal", "break-word"], style  # JupyterLab's break-all made "wat/er"
    # and for real: no rendered line of the handbook ends inside a word (a Range per line box)
    split = pre.evaluate(
        """e => { const text = e.firstChild; const s = text.textContent; const r = document.createRange();
            let top = null, out = [];
            for (let i = 0; i < s.length; i++) {
                r.setStart(text, i); r.setEnd(text, i + 1);
                const rects = r.getClientRects(); if (!rects.length) continue;
                const y = Math.round(rects[0].top);
                const inWord = /\\w/.test(s[i]) && /\\w/.test(s[i - 1]);
                if (top !== null && y > top && inWord) out.push(s.slice(i - 8, i + 8));
                top = y;
            }
            return out; }"""
    )
    assert split == [], split[:5]
    lab_page.shot("context-view", view)
    assert not console_errors, console_errors
