"""Driving one notebook in JupyterLab the way a person does: keyboard to run cells, clicks on outputs.

State is read from the front end (window.jupyterapp) rather than waited for by the clock, so nothing
here depends on how fast the machine is; every wait has a generous upper bound and fails loudly.
"""

from __future__ import annotations

import os
from pathlib import Path

from playwright.sync_api import Locator, Page

from .lab import Lab

OUT = Path(__file__).resolve().parents[2] / "test-output" / "browser"
WAIT_MS = 120_000

_NOTEBOOK_READY = """() => {
    const w = window.jupyterapp?.shell?.currentWidget;
    const k = w?.sessionContext?.session?.kernel;
    return !!k && k.status === 'idle' && (w.content?.widgets?.length ?? 0) > 0;
}"""
_CELL_DONE = """(i) => {
    const w = window.jupyterapp.shell.currentWidget;
    const cell = w.content.widgets[i];
    const k = w.sessionContext.session.kernel;
    return cell.model.executionCount !== null && !cell.promptNode.textContent.includes('*') && k.status === 'idle';
}"""


class LabPage:
    def __init__(self, page: Page, lab: Lab) -> None:
        self.page = page
        self.lab = lab
        self.next_cell = 0  # Shift+Enter goes on from here: re-running `%cireil load --demo` would reset the agent

    def open(self, name: str) -> None:
        self.page.goto(self.lab.notebook_url(name))
        self.page.wait_for_function(_NOTEBOOK_READY, timeout=WAIT_MS)

    def index_of(self, source_part: str) -> int:
        index = self.page.evaluate(
            """(s) => window.jupyterapp.shell.currentWidget.content.widgets
                .findIndex(c => c.model.sharedModel.getSource().includes(s))""",
            source_part,
        )
        assert index >= 0, f"no cell containing {source_part!r}"
        return index

    def cell(self, index: int) -> Locator:
        # Tagged through the app: with windowing, the DOM holds only the cells near the viewport.
        self.page.evaluate(
            "(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].node.setAttribute('data-test-cell', i)",
            index,
        )
        return self.page.locator(f'.jp-Notebook .jp-Cell[data-test-cell="{index}"]')

    def run_through(self, source_part: str, *, wait: bool = True) -> Locator:
        """Shift+Enter from the first cell not run yet down to (and including) the cell containing `source_part`;
        with `wait`, until that cell has finished and the kernel is idle."""
        last = self.index_of(source_part)
        assert last >= self.next_cell, f"{source_part!r} was already run"
        # That cell selected in command mode, where Shift+Enter runs a cell and moves down.
        self.page.evaluate(
            """(i) => { const nb = window.jupyterapp.shell.currentWidget.content;
                nb.activeCellIndex = i; nb.mode = 'command'; nb.activate(); }""",
            self.next_cell,
        )
        self.page.wait_for_function("() => !!document.activeElement?.closest('.jp-Notebook')")
        for _ in range(self.next_cell, last + 1):
            self.page.keyboard.press("Shift+Enter")
        self.next_cell = last + 1
        if wait:
            self.page.wait_for_function(_CELL_DONE, arg=last, timeout=WAIT_MS)
        return self.cell(last)

    def set_theme(self, theme: str) -> None:
        self.page.evaluate("(t) => window.jupyterapp.commands.execute('apputils:change-theme', {theme: t})", theme)
        self.page.wait_for_function("(t) => document.body.dataset.jpThemeName === t", arg=theme, timeout=WAIT_MS)

    def shot(self, name: str, element: Locator | None = None) -> Path:
        """A full-page screenshot under test-output/browser/ (a CI artifact); with CIREIL_SCREENSHOTS set,
        also a picture of just `element` there (the README's pictures: ./dev screenshots)."""
        OUT.mkdir(parents=True, exist_ok=True)
        path = OUT / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        target = os.environ.get("CIREIL_SCREENSHOTS")
        if target and element is not None:
            Path(target).mkdir(parents=True, exist_ok=True)
            element.scroll_into_view_if_needed()
            element.screenshot(path=str(Path(target) / f"{name}.png"))
        return path
