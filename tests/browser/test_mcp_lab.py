"""Tutorial 05 in a real JupyterLab: the wire fold of an MCP result opens, and the lint report shows."""

from __future__ import annotations

from playwright.sync_api import expect

from .labpage import WAIT_MS, LabPage


def test_wire_fold_opens_and_lint_report_shows(lab_page: LabPage, console_errors: list[str]):
    lab_page.open("05-mcp-and-plugins.ipynb")
    cell = lab_page.run_through('agent.call("mcp__garden__forecast", city="Porto")')
    out = cell.locator(".jp-Cell-outputArea")
    fold = out.locator("details.cireil-wire")
    expect(fold).to_be_visible(timeout=WAIT_MS)
    expect(out.locator(".cireil-outputcheck")).to_contain_text("matches the tool's outputSchema")
    exchange = fold.locator(":scope > div > details").first
    expect(exchange).to_be_hidden()  # folded until asked for
    fold.locator(":scope > summary").click()
    expect(fold).to_have_attribute("open", "")
    expect(exchange).to_be_visible()
    expect(exchange.locator(":scope > summary")).to_contain_text("tools/call → 200")
    exchange.locator(":scope > summary").click()
    expect(exchange).to_contain_text('"city": "Porto"')  # the JSON-RPC request as sent
    expect(exchange).to_contain_text("response headers · HTTP 200")
    lab_page.shot("mcp-wire-fold", out)

    cell = lab_page.run_through("%cireil tools --lint")
    out = cell.locator(".jp-Cell-outputArea")
    expect(out.locator(".cireil-tool-cost")).to_contain_text("tokens of tool definitions in every model request")
    report = out.locator(".cireil-lint-table")
    expect(report).to_be_visible(timeout=WAIT_MS)
    expect(report).to_contain_text("fix:")
    expect(out.locator(".cireil-lint").first).to_contain_text("the agent stays valid")
    lab_page.shot("tool-lint", out)
    assert not console_errors, console_errors
