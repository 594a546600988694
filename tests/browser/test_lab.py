"""The tutorials in a real JupyterLab in Debian's chromium: what a person sees and clicks.

Each test runs a tutorial cell by cell with Shift+Enter up to the cell it is about, then checks the
rendered output and clicks it. Console errors are collected for the whole page and must be none.
"""

from __future__ import annotations

import re

from playwright.sync_api import Locator, expect

from .conftest import LIVE_EXEC, PALETTE
from .labpage import WAIT_MS, LabPage

# Light backgrounds in the dark theme: any computed background brighter than this (0-255 luminance).
# Tints under 30 % opacity count as transparent: over a dark page they cannot come out brighter than
# 0.7 * ~60 + 0.3 * 255 ≈ 118.
LIGHT = 160

_BRIGHT_BACKGROUNDS = """(root, limit) => {
    const lum = (c) => { const m = c.match(/rgba?\\(([\\d.]+), ([\\d.]+), ([\\d.]+)(?:, ([\\d.]+))?\\)/);
        if (!m || (m[4] !== undefined && Number(m[4]) < 0.3)) return 0;  // (nearly) transparent
        return 0.299 * m[1] + 0.587 * m[2] + 0.114 * m[3]; };
    return [root, ...root.querySelectorAll('*')]
        .map(e => [e.tagName, getComputedStyle(e).backgroundColor])
        .filter(([, bg]) => lum(bg) > limit);
}"""


def view_text_left(view: Locator) -> float:
    """Where the text of a cireil view starts: inside its left border and padding."""
    return view.evaluate(
        "e => { const s = getComputedStyle(e); return e.getBoundingClientRect().left"
        " + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft); }"
    )


def outputs(cell: Locator) -> Locator:
    return cell.locator(".jp-Cell-outputArea")


def test_tool_form_is_keyboard_reachable_and_runs(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("01-getting-started.ipynb")
    cell = lab_page.run_through("%cireil ui list-dir")
    form = outputs(cell).locator(".widget-vbox").first
    field = form.locator("input[type=text]").first
    expect(field).to_be_visible(timeout=WAIT_MS)
    field.fill("/memories")
    run = form.get_by_role("button", name="Run")
    field.focus()
    for _ in range(10):  # Tab from the field must reach Run without the mouse
        if run.evaluate("b => b === document.activeElement"):
            break
        lab_page.page.keyboard.press("Tab")
    expect(run).to_be_focused()
    lab_page.page.keyboard.press("Enter")  # a focused button runs from the keyboard too
    expect(form.locator(".cireil-list-dir")).to_contain_text("volunteers.md", timeout=WAIT_MS)
    expect(form).to_contain_text("done in")
    lab_page.shot("tool-form", form)
    field.fill("/workspace")
    field.press("Enter")  # Enter in the field runs the form
    expect(form.locator(".cireil-list-dir")).to_contain_text("garden-handbook.md", timeout=WAIT_MS)
    assert not console_errors, console_errors


def test_widgets_say_when_their_kernel_is_gone(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("01-getting-started.ipynb")
    cell = lab_page.run_through("%cireil ui list-dir")
    form = outputs(cell).locator(".cireil-live").first
    note = form.locator(":scope > .cireil-gone")
    expect(form.get_by_role("button", name="Run")).to_be_visible(timeout=WAIT_MS)
    expect(note).to_be_hidden()
    lab_page.page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    expect(note).to_be_visible(timeout=WAIT_MS)
    expect(note).to_contain_text("kernel this belonged to was restarted or stopped")
    run = form.get_by_role("button", name="Run")
    assert run.evaluate("b => getComputedStyle(b).pointerEvents") == "none"  # no silent clicks
    assert not console_errors, console_errors


def test_outline_folds_and_every_row_pins_its_section(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("02-reading-and-context.ipynb")
    cell = lab_page.run_through("%cireil_read /workspace/garden-handbook.md")
    out = outputs(cell)
    nodes = out.locator(".cireil-outline-node")
    expect(nodes.first).to_be_visible(timeout=WAIT_MS)
    # the tree opens its top level only; pick a folded node by position (a visibility locator would move)
    index = nodes.evaluate_all(
        "ns => ns.findIndex(n => n.offsetParent !== null && getComputedStyle(n.children[1]).display === 'none')"
    )
    assert index >= 0, "the outline has a folded level"
    folded = nodes.nth(index)
    nested = folded.locator(":scope > .widget-vbox")
    expect(nested).to_be_hidden()
    folded.locator(":scope > .widget-hbox button").first.click()  # its caret
    expect(nested).to_be_visible()
    expect(nested.locator(".widget-hbox").first).to_be_visible()
    # every row shown has its own open action, on the row itself, its label whole
    rows = out.locator(".cireil-outline-node .widget-hbox, .widget-vbox > .widget-hbox").filter(has_text="lines ")
    visible = [r for r in rows.all() if r.is_visible()]
    assert len(visible) > 5
    for row in visible:
        button = row.get_by_role("button", name="open")
        expect(button).to_have_count(1)
        assert button.evaluate("b => b.scrollWidth <= b.clientWidth"), "open label cut"
    lab_page.shot("outline-tree", out)
    nested.get_by_role("button", name="open").first.click()  # a nested section pins like a top-level one
    expect(out.locator(".cireil-open-file")).to_contain_text("📌", timeout=WAIT_MS)
    expect(out.locator(".cireil-outline-node")).to_have_count(0)
    lab_page.shot("outline-pinned", out)
    assert not console_errors, console_errors


def test_dry_run_apply_button_writes_the_patch(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("03-editing.ipynb")
    cell = lab_page.run_through("%%cireil_edit /workspace/harvest_report.py --dry-run")
    out = outputs(cell)
    expect(out.locator(".cireil-edit")).to_contain_text("preview of", timeout=WAIT_MS)
    expect(out.locator(".cireil-edit")).to_contain_text('print("no harvest logged yet")')
    # JupyterLab right-aligns table cells of rendered HTML; code lines must still start at the left
    added = out.locator(".cireil-edit td", has_text="no harvest logged yet")
    expect(added).to_have_css("text-align", "left")
    lab_page.shot("patch-view", out)
    # the buttons line up with the text of the view above them, not with its coloured border
    frame_text = view_text_left(out.locator(".cireil-edit"))
    apply_left = out.get_by_role("button", name="Apply").evaluate("b => b.getBoundingClientRect().left")
    assert abs(apply_left - frame_text) <= 1, f"Apply sits {frame_text - apply_left:.0f} px left of the view's text"
    out.get_by_role("button", name="Apply").click()
    expect(out.locator(".cireil-edit")).to_contain_text("edited", timeout=WAIT_MS)
    expect(out.get_by_role("button", name="Apply")).to_have_count(0)
    # the tutorial's next cells read the file from Python: the patch must be on disk now
    check = lab_page.run_through("preview = agent.call(")
    expect(outputs(check)).to_contain_text("no harvest logged yet", timeout=WAIT_MS)
    lab_page.shot("patch-applied", out)
    assert not console_errors, console_errors


def test_exec_panel_updates_while_the_command_runs(lab_page: LabPage, console_errors: list[str]):
    lab_page.open(LIVE_EXEC)
    cell = lab_page.run_through("%cireil_exec", wait=False)
    out = outputs(cell)
    running = out.locator(".cireil-exec")
    # seen while running (⏳) with part of the output, then the same panel with more, then the result
    expect(running).to_contain_text("tick 1", timeout=WAIT_MS)
    expect(running).to_contain_text("⏳")
    expect(running).not_to_contain_text("tick 3")
    lab_page.shot("exec-panel-live", out)
    expect(running).to_contain_text("tick 3", timeout=WAIT_MS)
    expect(running).not_to_contain_text("⏳", timeout=WAIT_MS)
    expect(running).to_contain_text("exit 0")
    lab_page.shot("exec-panel", out)
    assert not console_errors, console_errors


def test_dark_theme_has_no_light_backgrounds(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("03-editing.ipynb")
    lab_page.set_theme("JupyterLab Dark")
    try:
        cell = lab_page.run_through("%%cireil_edit /workspace/harvest_report.py --dry-run")
        view = outputs(cell).locator(".cireil-edit")
        expect(view).to_contain_text("preview of", timeout=WAIT_MS)
        lab_page.shot("dark-theme", outputs(cell))
        assert view.evaluate(_BRIGHT_BACKGROUNDS, LIGHT) == []
        lum = view.evaluate(
            "e => { const [r, g, b] = getComputedStyle(e).color.match(/\\d+/g).map(Number);"
            " return 0.299 * r + 0.587 * g + 0.114 * b; }"
        )
        assert lum > LIGHT, "text in the dark theme is light"
    finally:
        lab_page.set_theme("JupyterLab Light")
    assert not console_errors, console_errors


def test_an_agent_turn_renders_as_a_conversation(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("06-agent-turns.ipynb")
    cell = lab_page.run_through("What files are in my workspace?")
    out = outputs(cell)
    # the person's message, the tool call with list-dir's own view, the agent's answer, the footer
    expect(out.locator(".cireil-chat").first).to_contain_text("What files are in my workspace?", timeout=WAIT_MS)
    expect(out.locator(".cireil-call")).to_contain_text("list-dir")
    expect(out.locator(".cireil-list-dir")).to_contain_text("garden-handbook.md")
    expect(out.locator(".cireil-chat").nth(1)).to_contain_text("Your workspace has")
    expect(out.locator(".cireil-turn-end")).to_contain_text("turn ended with a final respond")
    lab_page.shot("agent-turn", out)
    cell = lab_page.run_through("Thanks, that is helpful!")
    expect(outputs(cell).locator(".cireil-reactions")).to_contain_text("🌱", timeout=WAIT_MS)
    cell = lab_page.run_through("# the request the next model call would send")
    prompt = outputs(cell).locator(".cireil-prompt")
    system = prompt.locator("details", has_text="system prompt").first
    expect(system).to_be_visible(timeout=WAIT_MS)
    body = system.locator("pre")
    expect(body).to_be_hidden()  # folded until asked for
    lab_page.shot("prompt-view", prompt)
    system.locator(":scope > summary").click()
    expect(body).to_contain_text("<base_instructions>")
    # a file picked with the upload button goes with the next message, and the agent saves it
    cell = lab_page.run_through("# pick files here: they go with the next message")
    attach = outputs(cell)
    button = attach.locator(".widget-upload")
    expect(button).to_be_visible(timeout=WAIT_MS)
    with lab_page.page.expect_file_chooser() as chooser:  # the button opens the browser's file dialog
        button.click()
    chooser.value.set_files(files=[{"name": "seed-order.txt", "mimeType": "text/plain", "buffer": b"12 x basil\n"}])
    expect(attach).to_contain_text("for the next message: seed-order.txt (11 bytes)", timeout=WAIT_MS)
    cell = lab_page.run_through("Please save the attached file.")
    expect(outputs(cell).locator(".cireil-chat").first).to_contain_text("seed-order.txt", timeout=WAIT_MS)
    expect(outputs(cell).locator(".cireil-chat").nth(1)).to_contain_text(
        re.compile(r"Saved /workspace/inbox/m[0-9a-f]+-seed-order.txt")
    )
    assert not console_errors, console_errors


def test_the_tool_palette_titles_read_in_the_main_text_colour(lab_page: LabPage, console_errors: list[str]):
    lab_page.open(PALETTE)
    cell = lab_page.run_through("%cireil ui")
    title = outputs(cell).locator(".jupyter-widget-Collapse-header").first
    expect(title).to_be_visible(timeout=WAIT_MS)
    expect(title).to_contain_text("list-dir")
    main = title.evaluate("e => getComputedStyle(document.body).getPropertyValue('--jp-ui-font-color1').trim()")
    probe = title.evaluate(
        "(e, c) => { const p = document.createElement('span'); p.style.color = c; document.body.append(p);"
        " const v = getComputedStyle(p).color; p.remove(); return v; }",
        main,
    )
    assert title.evaluate("e => getComputedStyle(e).color") == probe
    assert not console_errors, console_errors
