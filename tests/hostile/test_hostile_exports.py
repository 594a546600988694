"""Exported notebooks and tests built from hostile recordings run nothing but the turn.

An exported notebook is made to be shared, and the session id and the message in it came from a person,
a model or a hand-edited recordings file: IPython expands `{expr}` and `$name` on a magic's line, and a
space there starts an option. Each hostile value goes through a real IPython kernel (nbclient) or a real
pytest run, and the test checks that nothing ran and that the turn replayed in the session it was
recorded in, with the message it had.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import cireil
from cireil.runtime.recorder.store import RECORDINGS_FILE
from cireil.testing.scripted_llm import ScriptedLLM, reply
from recorderkit import run_pytest
from turnkit import turn_agent


def hostile_names(mark: Path) -> list[str]:
    """Session ids an attacker would write into a recording: each one code, an option or an odd byte."""
    return [
        f"notebook:x {{__import__('pathlib').Path({str(mark)!r}).touch()}} y",
        "notebook:$HOME $copy_arg {copy} {AGENT}",
        "notebook: --attach /etc/hostname",
        "notebook:'q' \"dq\" \\back\\slash \\",
        "notebook:two\nlines\r\n%%bash\ntouch " + str(mark),
        "notebook:caf\u00e9 \u202eevil\x1b]52;c;aGk=\x07\x9b2J",
        "notebook:`code` ![](http://127.0.0.1:9/leak) <img src=x>",
    ]


# a name from a non-UTF-8 byte (a file name a tool read): sessions.db cannot hold it, so it is exported and
# checked as a literal, not replayed
ODD_BYTES = "notebook:caf\udce9 {copy}"

HOSTILE_MESSAGE = ">>> {__import__('os').system('touch MARK')} $HOME\n... %%bash\n!touch MARK\n  indented"


def record(tmp_path: Path, llm: ScriptedLLM) -> tuple[Path, int]:
    """One real turn (a read, then respond), its recorded id."""
    directory = turn_agent(tmp_path, llm.base_url)
    agent = cireil.load(directory)
    try:
        llm.script(
            reply.tool_calls(("read", {"path": "/workspace/notes.md"})),
            reply.tool_calls(("respond", {"content": "You need milk."})),
        )
        agent.turn("what do I need?")
        (turn,) = agent.turns()
        return directory, turn.id
    finally:
        agent.close()


def copy_turn(directory: Path, turn_id: int, session_id: str, message: str, args: dict | None = None) -> int:
    """The recorded turn again under another session id and message, as someone editing the file would."""
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    db.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    try:
        row = list(db.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone())
        columns = [d[0] for d in db.execute("SELECT * FROM turns").description]
        row[columns.index("id")] = None
        user = json.loads(row[columns.index("user_message")])
        user["content"] = message
        row[columns.index("user_message")] = json.dumps(user)
        # sqlite3 cannot encode a lone surrogate: the raw bytes go in as the file would hold them
        row[columns.index("session_id")] = session_id.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        marks = ",".join("?" * len(row))
        new = db.execute(f"INSERT INTO turns VALUES ({marks})", row).lastrowid
        raw = session_id.encode("utf-8", "surrogateescape")
        db.execute("UPDATE turns SET session_id = CAST(? AS TEXT) WHERE id = ?", (raw, new))
        for table in ("steps", "calls", "turn_blobs"):
            cols = [d[0] for d in db.execute(f"SELECT * FROM {table}").description]
            for r in db.execute(f"SELECT * FROM {table} WHERE turn_id = ?", (turn_id,)).fetchall():
                r = list(r)
                r[cols.index("turn_id")] = new
                if args is not None and table == "calls":
                    r[cols.index("arguments")] = json.dumps(args)
                if args is not None and table == "steps" and r[cols.index("n")] == 1:
                    body = json.loads(r[cols.index("reply")])
                    body["tool_calls"][0]["arguments"] = args
                    r[cols.index("reply")] = json.dumps(body)
                db.execute(f"INSERT INTO {table} VALUES ({','.join('?' * len(r))})", r)
        db.commit()
        return new
    finally:
        db.close()


def run_notebook(nb_path: Path, cwd: Path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(nb_path, as_version=4)
    # what the copy recorded: the session and message of every turn the notebook replayed
    nb.cells.insert(
        -1,
        nbformat.v4.new_code_cell(
            "print('REPLAYED', json.dumps([[t.session_id, t.text, [c.name for c in t.calls], t.user['content']]"
            " for t in cireil.current_agent().turns('*')]))"
        ),
    )
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}).execute()
    return nb


def replayed(nb) -> list:
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            if text.startswith("REPLAYED "):
                return json.loads(text[len("REPLAYED ") :])
    raise AssertionError("the check cell printed nothing")


def test_an_exported_notebook_runs_nothing_of_hostile_session_ids_and_messages(tmp_path, llm):
    mark = tmp_path / "pwned"
    directory, turn_id = record(tmp_path, llm)
    names = hostile_names(mark)
    message = HOSTILE_MESSAGE.replace("MARK", str(mark))
    for name in names:
        copy_turn(directory, turn_id, name, message)
    agent = cireil.load(directory)
    notebooks = []
    try:
        stored = {t.session_id for t in agent.turns("*")}
        assert set(names) <= stored, stored  # the file holds them as written, odd bytes included
        for n, name in enumerate(names):
            notebooks.append(agent.export_notebook(name, tmp_path / f"s{n}.ipynb"))
    finally:
        agent.close()
    for path in notebooks:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = [c["source"] for c in cells if c["cell_type"] == "code"]
        assert not any(line.startswith("%%") for source in code for line in source.splitlines())
        assert all(source.isascii() for source in code[1:])  # each hostile value inside an ASCII literal
        markdown = "".join(c["source"] for c in cells if c["cell_type"] == "markdown")
        assert "\x1b" not in markdown and "\x07" not in markdown
    # one kernel for every session: the turn cells of each notebook after the first one's
    import nbformat

    merged = nbformat.read(notebooks[0], as_version=4)
    for path in notebooks[1:]:
        cells = nbformat.read(path, as_version=4).cells
        merged.cells[-1:-1] = cells[2:-1]
    nbformat.write(merged, tmp_path / "all.ipynb")
    served = len(llm.requests)
    nb = run_notebook(tmp_path / "all.ipynb", tmp_path)
    assert not mark.exists(), "a hostile name or message ran code"
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    got = replayed(nb)
    assert [g[0] for g in got] == names  # each turn in the session it was recorded in
    assert all(g[1] == message.strip() and g[2] == ["read", "respond"] for g in got)
    assert len(llm.requests) == served  # the recorded replies came from the notebook's own stand-in
    outputs = json.dumps([c.get("outputs", []) for c in nb.cells])
    assert outputs.count("You need milk.") >= len(names)
    # nothing attached: the message is the text alone, no note of a file beside it
    assert all(g[3] == [{"type": "text", "text": message.strip()}] for g in got), got[0][3]


def test_a_session_id_of_non_utf8_bytes_is_exported_as_a_literal_that_gives_it_back(tmp_path, llm):
    import ast

    directory, turn_id = record(tmp_path, llm)
    copy_turn(directory, turn_id, ODD_BYTES, "caf\udce9 {copy} $HOME")
    agent = cireil.load(directory)
    try:
        path = agent.export_notebook(ODD_BYTES, tmp_path / "odd.ipynb")
    finally:
        agent.close()
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    send = [line for c in cells for line in c["source"].splitlines() if line.startswith("send(")]
    (call,) = send
    session, message = ast.literal_eval(call[len("send") :])
    assert session == ODD_BYTES and message == "caf\udce9 {copy} $HOME"


def test_a_markdown_heading_shows_hostile_text_as_code_only(tmp_path, llm):
    from cireil.runtime.recorder.notebook import md_code, md_text

    assert md_code("a `b` c") == "`` a `b` c ``"
    assert md_code("x\n\ny") == "` x\u2424\u2424y `"  # a blank line would end the span and start markup
    assert "\x1b" not in md_code("\x1b]0;title\x07") and "\u241b" in md_code("\x1b]0;title\x07")
    assert md_code("caf\udce9").encode("utf-8")  # a lone surrogate would fail writing the file
    assert md_text("read") == "read" and md_text("2026-12-06 03:20:02 UTC") == "2026-12-06 03:20:02 UTC"
    assert md_text("![](http://x/y)") == "` ![](http://x/y) `" and md_text("<b>x</b>").startswith("`")


def test_an_exported_test_of_hostile_names_and_messages_compiles_runs_nothing_and_passes(tmp_path, llm):
    mark = tmp_path / "pwned"
    directory, turn_id = record(tmp_path, llm)
    message = "\"\"\" \\ \x00 {x} \x1b]52;c;aGk=\x07 ''' " + HOSTILE_MESSAGE.replace("MARK", str(mark))
    ids = [copy_turn(directory, turn_id, name, message) for name in hostile_names(mark)]
    agent = cireil.load(directory)
    try:
        out = tmp_path / "out"
        out.mkdir()
        paths = [agent.export_test(tid, out / f"test_turn_{n}.py", fields=["success"]) for n, tid in enumerate(ids)]
    finally:
        agent.close()
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert "\x00" not in text and "\x1b" not in text and "\x07" not in text
    result = run_pytest(out)
    assert not mark.exists()
    assert f"{len(paths)} passed" in result.stdout, result.stdout + result.stderr


def test_nan_and_infinity_in_arguments_are_written_as_code_that_rebuilds_them(tmp_path, llm):
    import math

    directory, turn_id = record(tmp_path, llm)
    odd = {"path": "/workspace/notes.md", "n": float("nan"), "big": float("inf"), "low": float("-inf")}
    tid = copy_turn(directory, turn_id, "notebook:nan", "numbers", args=odd)
    agent = cireil.load(directory)
    try:
        path = agent.export_test(tid, tmp_path / "test_nan.py")
    finally:
        agent.close()
    text = path.read_text(encoding="utf-8")
    assert 'float("nan")' in text and 'float("inf")' in text and 'float("-inf")' in text
    space: dict = {}
    exec(compile(text, str(path), "exec"), space)  # the module's constants, as pytest would import them
    (call, _respond) = space["EXPECTED_CALLS"]
    assert call[0] == "read" and math.isnan(call[1]["n"]) and call[1]["big"] == math.inf
    assert math.isnan(space["TURN"]["steps"][0]["calls"][0]["arguments"]["n"])
    assert space["same"](call, ["read", dict(odd)])  # equal as JSON, though nan != nan
    # the read tool refuses those keys now as it did then: the test fails saying so, not with a NameError
    result = run_pytest(path)
    assert "NameError" not in result.stdout and "no longer accepts the recorded arguments" in result.stdout


def test_an_exported_test_says_which_row_is_damaged_instead_of_exporting_half_a_turn(tmp_path, llm):
    directory, turn_id = record(tmp_path, llm)
    db = sqlite3.connect(directory / RECORDINGS_FILE)
    db.execute("UPDATE calls SET result = '{not json' WHERE turn_id = ?", (turn_id,))
    db.commit()
    db.close()
    agent = cireil.load(directory)
    try:
        with pytest.raises(ValueError, match=rf"recorded turn {turn_id} skipped: tool call 0 of step 1 .*not JSON"):
            agent.export_test(turn_id, tmp_path / "test_x.py")
        with pytest.raises(ValueError, match=rf"recorded turn {turn_id} skipped"):
            agent.export_notebook("main", tmp_path / "x.ipynb")
        assert not (tmp_path / "test_x.py").exists() and not (tmp_path / "x.ipynb").exists()
    finally:
        agent.close()


def test_arguments_nested_too_deeply_are_refused_in_one_line(tmp_path, llm):
    directory, turn_id = record(tmp_path, llm)
    deep: dict = {"path": "/workspace/notes.md"}
    for _ in range(400):
        deep = {"d": deep}
    tid = copy_turn(directory, turn_id, "notebook:deep", "deep", args=deep)
    agent = cireil.load(directory)
    try:
        with pytest.raises(ValueError, match="nested over 100 levels deep"):
            agent.export_test(tid, tmp_path / "test_deep.py")
        assert not (tmp_path / "test_deep.py").exists()
    finally:
        agent.close()
