"""The turn recorder in a real kernel: a turn's model calls fold open under it, %cireil usage,
%cireil steps, %cireil prompt --diff."""

from __future__ import annotations

import json

from cireil.testing.scripted_llm import reply
from kernelharness import Kernel
from recorderkit import BIG
from turnkit import turn_agent

HOSTILE = "<img src=x onerror=alert(1)>"


def html_of(run) -> str:
    return "\n".join(b.get("text/html", "") for b in run.bundles)


def test_a_turn_shows_each_model_call_with_its_request_and_diff_and_usage_adds_up(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url, model_extra="contextWindow = 6000\n")
    (agent / "workspace" / "big.md").write_text(BIG)
    (agent / "config" / "cireil.toml").write_text('[prices."scripted-1"]\ninput = 2.0\noutput = 10.0\n')
    big = ("read", {"path": "/workspace/big.md"})
    missing = ("read", {"path": "/workspace/nope.md"})
    llm.script(
        reply.tool_calls(big, reasoning=HOSTILE),
        reply.tool_calls(big),
        *(reply.tool_calls(missing) for _ in range(3)),
        reply.tool_calls(("respond", {"content": "read gave up"})),
    )
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        run = kernel.run(f"%%cireil_agent\nread the big file {HOSTILE}")
        text, html = run.text(), html_of(run)
        assert "recorded turn 1: 6 model calls" in text
        assert "step 6 · " in text and "called respond" in text
        assert "model calls (6)" in html and "<details" in html
        assert "✕ tool disabled by the breaker: <code>read</code>" in html
        assert "stubbed by pruning" in html
        assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html

        run = kernel.run("%cireil usage")
        text = run.text()
        assert "1 recorded turns" in text and "6 steps" in text
        assert "$" in text and "no price for" not in text
        assert "<table>" in html_of(run)

        run = kernel.run("%cireil steps 1")
        assert "recorded turn 1: 6 model calls" in run.text()
        run = kernel.run("%cireil steps nine", ok=False)
        assert "usage: %cireil steps [TURN]" in run.text()
        run = kernel.run("%cireil steps 99", ok=False)
        assert "turn 99 is not recorded" in run.text()

        run = kernel.run("%cireil prompt --diff")
        text = run.text()
        assert "next request vs turn 1, step 6" in text
        assert "+ assistant: respond" in text and "~ metadata changed" in text
        assert "+ tool offered again: read" in text  # the breaker lasts one turn
        assert "+ user" not in text and "- user" not in text  # a stored message matches its live twin
    finally:
        kernel.shutdown()


def test_usage_names_unpriced_models_and_recording_problems(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        run = kernel.run("%cireil prompt --diff", ok=False)
        assert "no recorded model call in this session" in run.text()
        kernel.run("%%cireil_agent\nhello")
        run = kernel.run("%cireil usage --all")
        assert "usage of every session: 1 recorded turns" in run.text()
        assert 'no price for: scripted-1 ([prices."MODEL"] in config/cireil.toml)' in run.text()
        run = kernel.run("%cireil usage --all --session x", ok=False)
        assert "do not go together" in run.text()
    finally:
        kernel.shutdown()


def test_replay_from_the_magic_marks_a_changed_step(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "milk"})),
    )
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        kernel.run("%%cireil_agent\nwhat do I need?")
        run = kernel.run("%cireil replay")
        assert "replay of turn 1 (on a throwaway copy): 2 steps, every tool result as recorded" in run.text()
        (agent / "workspace" / "notes.md").write_text(f"# Notes\n\n{HOSTILE}\n")
        run = kernel.run("%cireil replay 1")
        text, html = run.text(), html_of(run)
        assert "1 step(s) differ" in text and "≠ step 1" in text and "read" in text and "≠ result differs" in text
        assert HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
        run = kernel.run("%cireil replay 7", ok=False)
        assert "turn 7 is not recorded" in run.text()
        run = kernel.run("%cireil replay --bogus", ok=False)
        assert "usage: %cireil replay [TURN] [--in-place]" in run.text()
    finally:
        kernel.shutdown()


def test_export_test_from_the_magic(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(reply.tool_calls(("list-dir", {"path": "/workspace"})), reply.tool_calls(("respond", {"content": "ok"})))
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        kernel.run('%%cireil_agent\nwhat is there? """')
        target = tmp_path / "test_listing.py"
        run = kernel.run(f"%cireil export test 1 {target} --fields list-dir.entries")
        assert f"wrote {target}: replays turn 1 offline" in run.text()
        assert "EXPECTED_FIELDS = {'1.0': {'entries'" in target.read_text()
        run = kernel.run(f"%cireil export test 1 {target}", ok=False)
        assert "exists" in run.text()
        run = kernel.run("%cireil export tests 1 x.py", ok=False)
        assert "usage: %cireil export test TURN PATH.py" in run.text()
        run = kernel.run(f"%cireil export test 5 {tmp_path / 'other.py'}", ok=False)
        assert "turn 5 is not recorded" in run.text()
    finally:
        kernel.shutdown()


def test_an_exported_session_notebook_replays_offline_with_nbclient(tmp_path, llm):
    import nbformat
    from nbclient import NotebookClient

    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("respond", {"content": "You need milk."})),
        reply.tool_calls(("write", {"path": "/workspace/list.txt", "content": "milk"})),
        reply.tool_calls(("respond", {"content": "Written down."})),
    )
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        kernel.run("%%cireil_agent --session shopping\nwhat do I need?")
        kernel.run(f"%%cireil_agent --session shopping\nwrite it down {HOSTILE}")
        target = tmp_path / "shopping.ipynb"
        run = kernel.run(f"%cireil export notebook shopping {target}")
        assert f"wrote {target}: replays session notebook:shopping offline" in run.text()
        run = kernel.run(f"%cireil export notebook nobody {tmp_path / 'none.ipynb'}", ok=False)
        assert "session notebook:nobody has no recorded turn" in run.text()
    finally:
        kernel.shutdown()
    (agent / "workspace" / "list.txt").unlink()
    served = len(llm.requests)
    nb = nbformat.read(target, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert "You need milk." in outputs and "Written down." in outputs and "Buy milk." in outputs
    html = "".join(o.get("data", {}).get("text/html", "") for c in nb.cells for o in c.get("outputs", []))
    assert "write it down" in html and HOSTILE not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert len(llm.requests) == served  # the recorded replies came from the notebook's own stand-in
    assert not (agent / "workspace" / "list.txt").exists()  # the write ran on the copy


def test_fork_from_the_magic_renders_the_forked_turn(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    llm.script(
        reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
        reply.tool_calls(("write", {"path": "/workspace/list.txt", "content": "milk"})),
        reply.tool_calls(("respond", {"content": "noted"})),
    )
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        kernel.run("%%cireil_agent\nmake my list")
        run = kernel.run('%cireil fork 1 2 --args \'{"path": "/workspace/list.txt", "content": "eggs"}\'')
        text = run.text()
        assert "forked turn 1 at step 2 into session notebook:fork-1-2" in text
        assert "you: make my list" in text and "testagent: noted" in text and "recorded turn 2: 3 model calls" in text
        assert (agent / "workspace" / "list.txt").read_text() == "eggs"
        run = kernel.run("%cireil fork 1 2 --args 'not json'", ok=False)
        assert "--args is not JSON" in run.text()
        run = kernel.run("%cireil fork 1 7", ok=False)
        assert "turn 1 has steps 1 to 3, not 7" in run.text()
        run = kernel.run("%cireil fork 1", ok=False)
        assert "usage: %cireil fork TURN STEP" in run.text()
    finally:
        kernel.shutdown()


def test_loading_an_agent_does_not_import_the_recorder(tmp_path, llm):
    agent = turn_agent(tmp_path, llm.base_url)
    kernel = Kernel(cwd=tmp_path)
    try:
        kernel.run(f"%load_ext cireil\n%cireil load {agent}")
        run = kernel.run(
            "import sys\nprint(sorted(m for m in sys.modules if 'recorder' in m or 'render.recording' in m))"
        )
        assert run.stdout.strip() == "[]"
        assert not (agent / "cireil-recordings.db").exists()  # nor opens its file: the first turn does
    finally:
        kernel.shutdown()


def test_an_exported_notebook_is_valid_nbformat(tmp_path, llm):
    import nbformat

    import cireil

    a = cireil.load(turn_agent(tmp_path, llm.base_url))
    try:
        a.turn("hello")
        path = a.export_notebook(None, tmp_path / "main.ipynb")
    finally:
        a.close()
    nbformat.validate(nbformat.read(path, as_version=4))
