"""An outline in a notebook: a tree of widgets where every section row folds and has its own open action."""

from __future__ import annotations

import time

import cireil
from conftest import MINIMAL_TOOLS, make_agent

DOC = "# Top\n\nintro\n\n" + "".join(
    f"## Part {i}\n\ntext {i}\n\n### Detail {i}\n\n{'words ' * 400}\n\n#### Deep {i}\n\n{'more ' * 300}\n\n"
    for i in range(1, 6)
)


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def _rows(box):
    """(toggle or spacer, label, open button) of every row built so far, depth first."""
    for child in box.children:
        row, *rest = child.children
        yield row.children
        for nested in rest:
            yield from _rows(nested)


def test_every_section_row_has_its_own_open_action_and_deep_rows_unfold(tmp_path):
    agent_dir = make_agent(tmp_path, MINIMAL_TOOLS.replace("read = false", "read = true") + "open-file = true\n")
    (agent_dir / "workspace" / "doc.md").write_text(DOC)
    from cireil.kernel.views.result import ResultView

    agent = cireil.load(agent_dir)
    read = agent.call("read", path="/workspace/doc.md")
    sections = read.data["outline"]["sections"]
    view = ResultView(read)
    assert view.buttons.children == ()  # no wall of buttons under the tree
    assert "<details" not in view.output.outputs[0]["data"]["text/html"]  # the tree is the widget one
    rows = list(_rows(view.tree))
    assert all(r[2].description == "open" for r in rows)
    # the top level is unfolded: Top and its parts are built; deeper levels wait for a click
    assert [r[1].value.count("Part") for r in rows].count(1) == 5
    detail_row = next(r for r in rows if "Part 3" in r[1].value)
    detail_row[0].click()  # unfold Part 3
    deep_row = next(r for r in _rows(view.tree) if "Detail 3" in r[1].value)
    deep_row[0].click()  # unfold Detail 3
    deepest = next(r for r in _rows(view.tree) if "Deep 3" in r[1].value)
    deep_id = next(s["id"] for s in sections if s["label"] == "Deep 3")
    assert deep_id in deepest[2].tooltip
    deepest[2].click()  # a fourth-level section pins like any other
    _wait(lambda: view.result.tool == "open-file")
    assert view.result.success and view.extra.children == ()
    assert deep_id in str(view.result.data)
    detail_row[0].click()  # folds again


def test_thousands_of_sibling_sections_are_built_a_page_at_a_time(tmp_path):
    from cireil.kernel.views.outline_tree import PAGE, OutlineTree

    sections = [{"id": "top", "type": "h1", "label": "Top", "line": 1, "lines": 3001}]
    sections += [
        {"id": f"s{i}", "type": "h2", "label": f"Part {i}", "line": 2 + i * 3, "lines": 3} for i in range(1000)
    ]
    opened: list[dict] = []
    view = OutlineTree({"sections": sections}, opened.append)
    assert len(view.open_buttons) == 1 + PAGE  # the root and the first page of its children
    children = view.children[0].children[1]
    more = children.children[-1]
    assert more.description == f"{1000 - PAGE} more…"
    more.click()
    assert len(view.open_buttons) == 1 + 2 * PAGE
    assert children.children[-1].description == f"{1000 - 2 * PAGE} more…"
    view.open_buttons[-1].click()
    assert opened[-1]["id"] == f"s{2 * PAGE - 1}"
