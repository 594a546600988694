"""Small things a person notices in `%cireil ui`: Enter runs the form, labels are not repeated, text is cut
at word boundaries."""

from __future__ import annotations

import cireil
from cireil.kernel.views.panels import cut_at_word
from widgetkit import output_updates, set_value, show_form, wait_for_output


def test_enter_in_a_text_field_runs_the_form(kernel, agent_dir):
    ids = show_form(kernel, agent_dir, "list-dir", "path")
    set_value(kernel, ids["field"], "/workspace")
    # what the browser sends when Enter is pressed in a one-line text field
    kernel.send_comm(ids["field"], {"method": "custom", "content": {"event": "submit"}})
    wait_for_output(kernel, ids["output"], lambda text: "hello.txt" in text, timeout=30)
    assert output_updates(kernel, ids["output"])


def test_a_checkbox_is_not_labelled_twice(agent_dir):
    from cireil.kernel.forms.toolform import tool_form

    (agent_dir / "config" / "tools.toml").write_text("read = true\n")
    form = tool_form(cireil.load(agent_dir), "read")
    raw = form.fields["raw"].control
    assert raw.description == ""  # the row's label already says "raw"
    assert "raw" in form.params.editor.labels["raw"].value


def test_cut_at_word_never_cuts_mid_word():
    text = "Read a file from the sandbox, returning its outline when it is long"
    assert cut_at_word(text, 200) == text
    cut = cut_at_word(text, 40)
    assert len(cut) <= 40 and cut.endswith("…") and text.startswith(cut[:-1])
    kept = cut[:-1]
    assert not text[len(kept)].isalnum()  # the cut falls between words
