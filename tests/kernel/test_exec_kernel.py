"""exec in a real kernel: magic forms, stdin from the cell body, live output, interrupt."""

from __future__ import annotations

import time

from exec_agent import exec_agent, processes_with

WIDGET = "application/vnd.jupyter.widget-view+json"


def test_magic_forms_live_output_and_the_final_panel(kernel, tmp_path):
    agent = exec_agent(tmp_path)
    kernel.run(f"%load_ext cireil\n%cireil load {agent}")

    run = kernel.run("%cireil_exec ls -a /workspace")
    assert run.result["application/vnd.cireil.result+json"]["stdout"].split() == [".", "..", "docs", "hello.txt"]
    assert run.of_type("display_data", "update_display_data") == []  # fast: no live view, just the result
    assert run.result["text/plain"].startswith("$ ls -a /workspace\nexit 0 · ")

    run = kernel.run("%%cireil_exec python3 -\nimport sys\nprint(6 * 7, sys.argv[1:])")
    assert run.result["application/vnd.cireil.result+json"]["stdout"] == "42 []\n"

    run = kernel.run("%cireil_exec sh -c 'echo \"a b\"; echo x=1' ")
    assert run.result["application/vnd.cireil.result+json"]["stdout"] == "a b\nx=1\n"

    ticking = "for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 0.15; done"
    run = kernel.run(f'%cireil_exec sh -c "{ticking}"')
    shown = run.of_type("display_data")
    updates = run.of_type("update_display_data")
    assert len(shown) == 1 and len(updates) >= 2  # one display, updated in place
    assert len(updates) <= 8  # throttled: ~1.2 s of output at most four updates a second, plus the final clear
    live = shown[0]["content"]["data"]["text/plain"]
    assert live.startswith("$ sh -c") and "running" in live and "tick 1" in live
    assert updates[-1]["content"]["data"] == {"text/plain": ""}  # the live view gives way to the result
    assert updates[-1]["content"]["transient"]["display_id"] == shown[0]["content"]["transient"]["display_id"]
    assert "tick 8" in run.result["text/plain"]

    run = kernel.run("%cireil_exec head -c 100000 /dev/zero")
    panel = run.result
    path = panel["application/vnd.cireil.result+json"]["stdoutPath"]
    assert f"stdout: 97.7 KiB saved to {path}" in panel["text/plain"]
    assert WIDGET in panel  # the spill file gets an "open" button (a read call)

    run = kernel.run("%cireil_exec false", ok=False)
    assert run.status == "ok" and "exit 1" in run.result["text/plain"]  # a failed command is a result


def test_interrupting_a_running_command_kills_it_and_the_kernel_stays_usable(kernel, tmp_path):
    agent = exec_agent(tmp_path)
    kernel.run(f"%load_ext cireil\n%cireil load {agent}")
    marker = "987.875"
    msg_id = kernel.submit(f"%cireil_exec sh -c 'echo partial; sleep {marker} & sleep {marker}'")
    deadline = time.monotonic() + 10
    while len(processes_with(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(processes_with(marker)) >= 2
    time.sleep(0.6)  # long enough for the live panel to have been shown
    started = time.monotonic()
    kernel.interrupt()
    run = kernel.collect(msg_id, timeout=20)
    assert time.monotonic() - started < 5
    # one line, no frames of cireil's internals; still a KeyboardInterrupt for code that catches one
    assert run.error["ename"] == "KeyboardInterrupt" and len(run.error["traceback"]) == 1
    assert run.error["traceback"][0].startswith("KeyboardInterrupt: exec interrupted after")
    panel = run.bundles[-1]["text/plain"]  # the live panel, marked as interrupted, its output kept
    assert "interrupted after" in panel and "running" not in panel and "partial" in panel
    assert processes_with(marker) == []
    assert kernel.run("1 + 1").result["text/plain"] == "2"
    assert (
        kernel.run("%cireil_exec echo still here").result["application/vnd.cireil.result+json"]["stdout"]
        == "still here\n"
    )


def test_a_widget_form_streams_live_output_into_its_output_then_shows_the_panel(tmp_path):
    import cireil
    from cireil.kernel.forms.toolform import tool_form

    agent = cireil.load(exec_agent(tmp_path))
    form = tool_form(agent, "exec")
    shown: list[str] = []

    class Recorder:  # stands in for the Output widget: records every assignment
        def __init__(self) -> None:
            self._outputs: tuple = ()

        @property
        def outputs(self) -> tuple:
            return self._outputs

        @outputs.setter
        def outputs(self, value: tuple) -> None:
            self._outputs = value
            shown.append(value[0]["data"]["text/plain"])

    form.output = Recorder()
    form.fields["command"].control.value = "sh"
    for word in ("-c", "for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.15; done"):
        form.fields["args"].add(word)
    form.run_button.click()
    assert form.wait(10)
    assert any(text.startswith("$ sh -c") and "running" in text for text in shown[:-1])
    assert shown[-1].startswith("$ sh -c") and "exit 0" in shown[-1] and "tick 6" in shown[-1]


def test_a_folder_whose_host_path_stays_visible_is_said_in_the_cell(kernel, tmp_path):
    """A read-write mount outside the agent stays a plain bind (anon_mounts.py): the notebook says so, once."""
    outside = tmp_path / "shared-rw"
    outside.mkdir()
    mounts = f'[[mounts]]\nsource = "{outside}"\ntarget = "shared"\nmode = "rw"\n'
    agent = exec_agent(tmp_path, mounts=mounts, name="warned")
    kernel.run(f"%load_ext cireil\n%cireil load {agent}")
    first = kernel.run("%cireil_exec sh -c 'echo w > /workspace/shared/f'")
    assert "exit 0" in first.result["text/plain"]
    assert "/workspace/shared" in first.stderr and "outside the agent directory" in first.stderr, first.stderr
    assert "/workspace " not in first.stderr  # the agent's own folders are hidden: nothing said of them
    second = kernel.run("%cireil_exec true")
    assert "mountinfo" not in second.stderr  # said once, not on every call
