"""A failed edit in a notebook: the lines of the file its oldText comes closest to, differences marked.

The agent-facing error (with the spec's Context: the top of the file) is unchanged."""

from __future__ import annotations

import time

import cireil
from cireil.render import result_bundle
from cireil.runtime.edit.closest import closest
from conftest import MINIMAL_TOOLS, make_agent

REPORT = """import csv


def main() -> None:
    crops = totals("harvest.csv")
    width = max(len(crop) for crop in crops)
    for crop, kg in sorted(crops.items(), key=lambda item: -item[1]):
        print(f"{crop:<{width}}  {kg:6.1f} kg")
"""


def test_closest_finds_the_window_most_like_the_old_text():
    found = closest(REPORT, "for crop, kg in sorted(crops.itmes()):\n    print(crop)")
    assert found.start == 7
    assert found.lines[0].strip().startswith("for crop, kg in sorted(crops.items()")
    assert found.wanted == ["for crop, kg in sorted(crops.itmes()):", "    print(crop)"]
    assert closest("", "x") is None and closest(REPORT, "\n  \n") is None


def test_closest_stays_linear_on_a_large_file():
    big = "\n".join(f"line number {i} with some text {i * 7}" for i in range(100_000))
    started = time.perf_counter()
    found = closest(big, "line numbr 15000 with some text 105000")
    # a generous bound (hostile-input rule): a quadratic scan of 100,000 lines would take minutes
    assert time.perf_counter() - started < 30
    assert found.start == 15001


def test_a_failed_edit_shows_the_closest_lines_in_monospace_with_differences_marked(tmp_path):
    agent_dir = make_agent(tmp_path, MINIMAL_TOOLS + "edit = true\n")
    (agent_dir / "workspace" / "report.py").write_text(REPORT)
    agent = cireil.load(agent_dir)
    old = "for crop, kg in sorted(crops.itmes()):"
    result = agent.call("edit", path="/workspace/report.py", edits=[{"oldText": old, "newText": "x"}])
    assert not result.success
    assert "\n\nContext:\nimport csv" in result.data["error"]  # what the agent sees stays as the spec has it
    bundle = result_bundle(result)
    text, html = bundle["text/plain"], bundle["text/html"]
    assert "closest lines in the file (from line 7" in text
    assert "Context:" not in text and "import csv" not in text  # not the top of the file
    assert "ite[m]s" in text and "itm[e]s" in text  # the differing characters, marked
    assert "font-family:var(--jp-code-font-family" in html.split("closest lines in the file")[1]
    assert html.count("background:rgba(") >= 2  # file and oldText differences highlighted


def test_other_edit_failures_keep_the_plain_error_view(tmp_path):
    agent_dir = make_agent(tmp_path, MINIMAL_TOOLS + "edit = true\n")
    agent = cireil.load(agent_dir)
    result = agent.call("edit", path="/workspace/missing.py", edits=[{"oldText": "a", "newText": "b"}])
    assert not result.success
    text = result_bundle(result)["text/plain"]
    assert text.startswith("edit failed: ") and "closest lines" not in text


def test_the_view_reads_through_the_sandbox_when_the_file_was_swapped_after_the_call(tmp_path):
    """Between the failed call and its view, a command in exec turns the file into a FIFO or a link out."""
    import os
    import threading

    agent_dir = make_agent(tmp_path, MINIMAL_TOOLS + "edit = true\n")
    report = agent_dir / "workspace" / "report.py"
    report.write_text(REPORT)
    outside = tmp_path / "outside.py"
    outside.write_text(REPORT.replace("crops", "SECRET_OUTSIDE"))
    agent = cireil.load(agent_dir)
    old = "for crop, kg in sorted(crops.itmes()):"
    result = agent.call("edit", path="/workspace/report.py", edits=[{"oldText": old, "newText": "x"}])
    assert not result.success
    report.unlink()
    os.symlink(outside, report)
    text = result_bundle(result)["text/plain"]
    assert text.startswith("edit failed: ") and "SECRET_OUTSIDE" not in text
    report.unlink()
    os.mkfifo(report)
    shown: list[str] = []
    thread = threading.Thread(target=lambda: shown.append(result_bundle(result)["text/plain"]), daemon=True)
    thread.start()
    thread.join(30)
    blocked = thread.is_alive()
    if blocked:  # let the blocked open go (a writer that closes), then fail
        os.close(os.open(report, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(10)
    assert not blocked, "rendering the view blocked on a FIFO"
    assert shown and shown[0].startswith("edit failed: ") and "closest lines" not in shown[0]
