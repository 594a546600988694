"""edit's inline view: the patch as text, a numbered colored diff as HTML, Apply/Discard on previews."""

from __future__ import annotations

import re

import pytest

import cireil
from cireil import render
from cireil.render import result_bundle
from cireil.render.edit import ADDED_BG, REMOVED_BG
from conftest import make_agent


@pytest.fixture
def agent(tmp_path):
    a = cireil.load(make_agent(tmp_path, "edit = true\n"))
    (a.directory / "workspace" / "m.py").write_text("".join(f"line{i}\n" for i in range(1, 21)))
    return a


def _preview(agent):
    return agent.call(
        "edit", path="/workspace/m.py", edits=[{"oldText": "line12\n", "newText": "LINE12\nextra\n"}], dryRun=True
    )


def test_text_is_the_patch_and_html_numbers_and_colors_lines(agent):
    result = _preview(agent)
    bundle = result_bundle(result)
    assert bundle["text/plain"] == result["patch"]
    html = bundle["text/html"]
    assert "<script" not in html and "<style" not in html
    assert "@@ -8,9 +8,10 @@" in html
    removed = re.search(r'<tr style="background:([^;]+);">(.*?)</tr>', html)
    assert removed and removed.group(1) == REMOVED_BG and ">12<" in removed.group(2) and "-line12" in removed.group(2)
    assert re.search(re.escape(ADDED_BG) + r"[^>]*><td[^>]*></td><td[^>]*>13</td><td[^>]*>\+extra", html)
    assert "preview" in html


def test_preview_offers_apply_and_discard(agent):
    result = _preview(agent)
    apply, discard = render.result_actions(result)
    assert (apply.label, apply.tool, apply.args) == (
        "Apply",
        "edit",
        {"path": "/workspace/m.py", "apply": result["applyId"]},
    )
    assert (discard.label, discard.tool) == ("Discard", "")
    applied = agent.call(apply.tool, apply.args)
    assert applied.success and render.result_actions(applied) == []
    assert "edited" in result_bundle(applied)["text/html"]


def test_stale_preview_apply_shows_why(agent):
    result = _preview(agent)
    (agent.directory / "workspace" / "m.py").write_text("changed\n")
    [apply, _] = render.result_actions(result)
    stale = agent.call(apply.tool, apply.args)
    text = result_bundle(stale)["text/plain"]
    assert "File content has changed since the dry-run" in text
    assert render.result_actions(stale) == []
