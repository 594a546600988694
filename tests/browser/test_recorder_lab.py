"""Tutorial 08 in a real JupyterLab: a recorded step folds open to its diff and its exact request, and a
`%%cireil_agent --step` turn is clicked through (Edit arguments, then Approve) after its cell has returned."""

from __future__ import annotations

from playwright.sync_api import expect

from .labpage import WAIT_MS, LabPage
from .test_lab import outputs


def test_a_recorded_step_opens_to_its_diff_and_request_and_step_mode_takes_clicks(
    lab_page: LabPage, console_errors: list[str]
):
    lab_page.open("08-turn-recorder.ipynb")
    cell = lab_page.run_through("Summarise the committee notes and the minutes.")
    recording = outputs(cell).locator(".cireil-recording")
    expect(recording).to_contain_text("model calls (5)", timeout=WAIT_MS)
    step = recording.locator("details", has=lab_page.page.locator("summary", has_text="step 5 ·")).first
    diff = step.locator(":scope > details", has_text="diff against step 4")
    request = step.locator(":scope > details", has_text="request as POSTed")
    expect(diff).to_be_hidden()  # folded until asked for
    step.locator(":scope > summary").click()
    expect(diff).to_be_visible()
    diff.locator(":scope > summary").click()
    # the breaker took read away after three failures: the diff says so, with the messages the step added
    expect(diff).to_contain_text("tool disabled by the breaker: read")
    expect(diff).to_contain_text("+ added · tool result")
    body = request.locator("pre")
    expect(body).to_be_hidden()
    request.locator(":scope > summary").click()
    expect(body).to_contain_text('"model": "wren-scripted"')
    expect(body).to_contain_text('"messages"')
    lab_page.shot("recorded-step", step)

    cell = lab_page.run_through("%%cireil_agent --step\nPut watering")  # returns at once: the turn waits below it
    view = outputs(cell).locator(".cireil-live").first
    edit = view.get_by_role("button", name="Edit arguments")
    expect(edit).to_be_visible(timeout=WAIT_MS)
    expect(view).to_contain_text("the model asks to run write")
    lab_page.shot("step-mode-paused", view)
    edit.click()
    content = view.locator("textarea").first
    expect(content).to_have_value("- water the beans\n")
    content.fill("- water the beans\n- sow the radishes\n")
    # every button shows its whole label (ipywidgets' fixed width cut this one to "Run with these…")
    for button in view.locator("button").all():
        if button.is_visible():
            assert button.evaluate("b => b.scrollWidth <= b.clientWidth"), f"label cut: {button.text_content()}"
    lab_page.shot("step-mode-edit", view)
    view.get_by_role("button", name="Run with these arguments").click()
    expect(view).to_contain_text("the model asks to run respond", timeout=WAIT_MS)
    # the call line now shows the arguments the call ran with, not the model's
    ran = view.locator(".cireil-call", has_text="write")
    expect(ran).to_contain_text("write (edited)")
    expect(ran).to_contain_text("sow the radishes")
    view.get_by_role("button", name="Approve").click()
    expect(view).to_contain_text("turn ended with a final respond", timeout=WAIT_MS)
    expect(view).to_contain_text("you edited the arguments of this call")
    expect(view.get_by_role("button", name="Approve")).to_be_hidden()
    expect(view.get_by_role("button", name="Stop turn")).to_be_hidden()
    lab_page.shot("step-mode", view)
    cell = lab_page.run_through("%cireil stop\n%cireil steps")
    expect(outputs(cell)).to_contain_text("no step-mode turn is live", timeout=WAIT_MS)
    expect(outputs(cell).locator(".cireil-recording")).to_contain_text("write (edited)")
    assert not console_errors, console_errors
