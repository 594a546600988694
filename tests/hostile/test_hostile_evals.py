"""Hostile input to scenario evals (issue 29): regexes that backtrack on the model's text, checks that never
return, names carrying control characters into JUnit/JSON and the terminal, hand-edited result files."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from cireil.runtime.base.errors import ConfigError
from cireil.runtime.evals.matrix import run_matrix
from cireil.runtime.evals.report import EvalReport
from cireil.runtime.evals.scenario import load_scenarios
from cireil.runtime.evals.worker import RunResult
from cireil.testing.scripted_llm import reply
from evalkit import write
from turnkit import turn_agent

EVIL = "\x1b]52;c;SGVsbG8=\x07\x1b[2J\x00\x7f\x9b\ud800\ufffe\uffff"  # OSC 52, BEL, clear, NUL, DEL, C1, ...
RAW = ("\x1b", "\x07", "\x00", "\x9b")  # what must never reach a terminal


def cireil(*args: object, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cireil", *map(str, args)],
        capture_output=True,
        text=True,
        errors="surrogateescape",
        timeout=240,
        **kw,
    )


def strict_json(text: str) -> object:
    def no_constants(name: str) -> object:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=no_constants)


@pytest.fixture
def agent_dir(tmp_path, llm):
    return turn_agent(tmp_path / "agents", llm.base_url)


# -- deadlines that hold -------------------------------------------------------------------------------


PINNED = """\
    message = "hi"
    [answer]
    contains = "done"
    [[reply]]
    calls = [{ tool = "respond", args = { content = "done" } }]
"""

BACKTRACKING = """\
    message = "say a lot of a"
    [[expect.call]]
    tool = "respond"
    args = { content = { regex = "(a+)+$" } }
    [answer]
    regex = ["(a+)+$", "(x+x+)+y"]
"""


def test_a_backtracking_regex_on_the_models_text_is_checked_in_linear_time(tmp_path, agent_dir, llm):
    llm.default = reply.tool_calls(("respond", {"content": "a" * 40 + "!"}))
    scenarios = load_scenarios([write(tmp_path / "evals" / "greedy.toml", BACKTRACKING)])
    started = time.monotonic()
    (run,) = run_matrix(agent_dir, scenarios, jobs=1, timeout=8).results
    assert time.monotonic() - started < 8
    # checked (and failed on its merits), not stopped by the deadline: Python's re would take ~2^40 steps
    assert "answer does not match /(a+)+$/" in run.failures, run.failures
    assert "answer does not match /(x+x+)+y/" in run.failures
    assert any("argument 'content'" in f for f in run.failures)
    assert not any("timed out" in f for f in run.failures)


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        (r"(a)\\1", "backreferences"),
        ("(?=a)a", "lookaround"),
        ("(?<!b)a", "lookaround"),
        ("a{2000}", "repetition"),
    ],
)
def test_a_regex_rre2_cannot_run_is_refused_when_the_file_is_loaded(tmp_path, pattern, why):
    path = write(tmp_path / "s.toml", f'message = "x"\n\n[answer]\nregex = "{pattern}"\n')
    with pytest.raises(ConfigError) as caught:
        load_scenarios([path])
    (issue,) = caught.value.issues
    assert str(issue).startswith(f"{path}:4: ")
    assert why in str(issue) and "RE2" in str(issue)
    argument = write(
        tmp_path / "a.toml",
        f'message = "x"\n[[expect.call]]\ntool = "read"\nargs = {{ path = {{ regex = "{pattern}" }} }}\n',
    )
    with pytest.raises(ConfigError) as caught:
        load_scenarios([argument])
    assert str(caught.value.issues[0]).startswith(f"{argument}:4: ") and why in str(caught.value.issues[0])


def test_timeout_ends_a_run_whose_check_never_returns_and_the_next_run_goes_on(tmp_path, agent_dir, llm):
    write(tmp_path / "evals" / "stuck.py", "import time\n\ndef forever(run):\n    while True:\n        time.sleep(1)\n")
    hangs = write(tmp_path / "evals" / "a_hangs.toml", 'message = "hi"\n[answer]\ncheck = "stuck.forever"\n')
    fine = write(tmp_path / "evals" / "b_fine.toml", 'message = "hi"\n[answer]\ncontains = "done"\n')
    llm.default = reply.tool_calls(("respond", {"content": "done"}))
    started = time.monotonic()
    report = run_matrix(agent_dir, load_scenarios([hangs, fine]), jobs=1, timeout=6)
    took = time.monotonic() - started
    runs = {r.scenario: r for r in report.results}
    assert runs["a_hangs"].status == "error"
    assert runs["a_hangs"].failures[0].startswith("timed out: the run was still going at its --timeout of 6 seconds")
    assert runs["b_fine"].status == "pass", runs["b_fine"].failures  # a fresh worker took the stuck one's place
    assert took < 40


def test_cli_timeout_ends_the_eval_and_says_timed_out(tmp_path, agent_dir, llm):
    write(tmp_path / "evals" / "stuck.py", "def forever(run):\n    while True:\n        pass\n")  # pure CPU
    write(tmp_path / "evals" / "hangs.toml", 'message = "hi"\n[answer]\ncheck = "stuck.forever"\n')
    llm.default = reply.tool_calls(("respond", {"content": "done"}))
    started = time.monotonic()
    out = cireil("eval", agent_dir, tmp_path / "evals", "--timeout", 4, "--junit", tmp_path / "r.xml")
    assert time.monotonic() - started < 60
    assert out.returncode == 1, out.stderr
    assert "timed out" in out.stdout
    ET.parse(tmp_path / "r.xml")


# -- JUnit XML and JSON well-formed ----------------------------------------------------------------------


def hostile_report() -> EvalReport:
    name = f"scen{EVIL}"
    report = EvalReport(f"agent{EVIL}", [name], [f"var{EVIL}"], total=2)
    report.add(
        RunResult(
            f"r0{EVIL}",
            name,
            f"var{EVIL}",
            0,
            f"notebook:{EVIL}",
            status="fail",
            failures=[f"expected call read: not called (called: tool{EVIL})", f"answer {EVIL}"],
            answer=f"model said {EVIL}",
            calls=[{"name": f"tool{EVIL}", "input": {f"k{EVIL}": f"v{EVIL}"}, "ok": True}],
            latency_s=float("nan"),
        )
    )
    report.add(
        RunResult(f"r1{EVIL}", name, f"var{EVIL}", 1, "notebook:eval", status="error", error=EVIL, failures=[EVIL])
    )
    return report


def test_junit_and_json_stay_well_formed_whatever_the_names_carry(tmp_path):
    report = hostile_report()
    report.write_junit(tmp_path / "r.xml")
    root = ET.parse(tmp_path / "r.xml").getroot()
    (suite,) = root.iter("testsuite")
    assert all(float(node.get("time")) >= 0 for node in (suite, *root.iter("testcase")))  # NaN written as 0
    assert suite.get("name").startswith("var\\x1b]52;c;SGVsbG8=\\x07")  # visible, not dropped
    failure = next(root.iter("failure"))
    assert "tool\\x1b" in failure.get("message") and "\\ud800" in failure.text and "\\ufffe" in failure.text
    report.write_json(tmp_path / "r.json")
    raw = (tmp_path / "r.json").read_bytes()
    data = strict_json(raw.decode("utf-8"))  # valid UTF-8 (no lone surrogate), no NaN
    assert data["runs"][0]["latency_s"] is None
    loaded = EvalReport.load(tmp_path / "r.json")
    assert loaded.results[0].scenario.startswith("scen\x1b]52")  # JSON carries the controls, escaped
    assert not any(isinstance(v, float) and math.isnan(v) for v in (loaded.results[0].latency_s,))


def test_a_real_eval_with_hostile_names_writes_files_ci_can_parse(tmp_path, agent_dir, llm):
    write(
        tmp_path / "evals" / "evil.toml",
        """\
        name = "evil\\u001b]52;c;SGVsbG8=\\u0007\\u0000"
        message = "hi"
        [[expect.call]]
        tool = "read"
        [answer]
        contains = "milk\\u001b[31m"
        """,
    )
    write(tmp_path / "evals" / "variants.toml", '["base\\u001b[2J"]\n')
    llm.default = reply.tool_calls(("respond", {"content": "bell\x07 \x1b]0;title\x07 \ud83d"}))
    out = cireil("eval", agent_dir, tmp_path / "evals", "--junit", tmp_path / "r.xml", "--json", tmp_path / "r.json")
    assert out.returncode == 1, out.stderr
    root = ET.parse(tmp_path / "r.xml").getroot()
    assert next(root.iter("testcase")).get("classname").startswith("evil\\x1b]52;c;SGVsbG8=\\x07\\x00")
    strict_json((tmp_path / "r.json").read_text(encoding="utf-8"))
    for stream in (out.stdout, out.stderr):
        assert not any(c in stream for c in RAW), stream
    assert "evil␛]52;c;SGVsbG8=␇" in out.stdout


# -- hand-edited result files ---------------------------------------------------------------------------


def good_result() -> dict:
    report = EvalReport("agent", ["notes"], ["base"], total=1)
    report.add(RunResult("r0", "notes", "base", 0, "notebook:eval", status="fail", failures=["nope"]))
    return json.loads(report.json_text())


def edited(change) -> dict:
    data = good_result()
    change(data)
    return data


BAD_FILES = {
    "truncated": (lambda: json.dumps(good_result())[:60], "not valid JSON"),
    "not json": (lambda: "<xml/>", "not valid JSON"),
    "not an object": (lambda: "[1, 2]", "not a cireil eval result"),
    "wrong format": (lambda: json.dumps(edited(lambda d: d.update(format="other/1"))), "not a cireil eval result"),
    "agent a number": (lambda: json.dumps(edited(lambda d: d.update(agent=3))), "agent: expected a string"),
    "scenarios a string": (
        lambda: json.dumps(edited(lambda d: d.update(scenarios="notes"))),
        "scenarios: expected an array of strings",
    ),
    "runs an object": (lambda: json.dumps(edited(lambda d: d.update(runs={}))), "runs: expected an array"),
    "run a string": (lambda: json.dumps(edited(lambda d: d.update(runs=["r0"]))), "runs[0]: expected an object"),
    "repeat a string": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].update(repeat="1"))),
        "runs[0].repeat: expected a whole number",
    ),
    "interrupted a string": (
        lambda: json.dumps(edited(lambda d: d.update(interrupted="yes"))),
        "interrupted: expected true/false",
    ),
    "status unknown": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].update(status="maybe"))),
        "runs[0].status: expected one of pass, fail, error, interrupted",
    ),
    "failures of numbers": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].update(failures=[1, 2]))),
        "runs[0].failures: expected an array of strings",
    ),
    "run id missing": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].pop("run_id"))),
        "runs[0].run_id: missing",
    ),
    "nan latency": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].update(latency_s=float("nan")))),
        "runs[0].latency_s: expected a finite number or null, not NaN",
    ),
    "infinite total": (lambda: json.dumps(edited(lambda d: d.update(total=float("inf")))), "total: expected"),
    "tokens true": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].update(tokens=True))),
        "runs[0].tokens: expected a whole number",
    ),
    "recording a list": (
        lambda: json.dumps(edited(lambda d: d["runs"][0].update(recording=[1]))),
        "runs[0].recording: expected an object or null",
    ),
    "grid cell passed a string": (
        lambda: json.dumps(edited(lambda d: d["grid"][0].update(passed="yes"))),
        "grid[0].passed: expected a whole number, 0 or more, not a string",
    ),
    "deep": (lambda: "[" * 100_000 + "]" * 100_000, "nested deeper than"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
@pytest.mark.parametrize("command", ["eval-show", "eval-compare"])
def test_a_hand_edited_result_file_is_refused_in_one_line(tmp_path, case, command):
    make, expected = BAD_FILES[case]
    bad = tmp_path / "bad.json"
    bad.write_text(make(), encoding="utf-8")
    good = tmp_path / "good.json"
    good.write_text(json.dumps(good_result()))
    out = cireil(command, bad) if command == "eval-show" else cireil(command, good, bad)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0].startswith(f"cireil: error: {bad}: ") and expected in lines[0], lines[0]


def test_files_that_are_not_results_are_refused_by_name(tmp_path):
    big = tmp_path / "big.json"
    with big.open("w") as f:  # 50 MB of valid JSON: refused by its size before anything reads it
        f.write('{"format": "cireil-eval/1", "agent": "')
        f.write("x" * 50_000_000)
        f.write('", "scenarios": [], "variants": []}')
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"format": "cireil-eval/1", "agent": "caf\xe9"}')
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, expected in (
        (big, "over the 33,554,432-byte limit"),
        (latin, "line 1: not UTF-8 text"),
        (fifo, "not a regular file"),
        (tmp_path, "not a regular file"),
        (tmp_path / "missing.json", "No such file"),
    ):
        started = time.monotonic()
        out = cireil("eval-show", path)
        assert time.monotonic() - started < 30
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        (line,) = out.stderr.strip().splitlines()
        assert line.startswith(f"cireil: error: {path}: ") and expected in line, line
    assert cireil("eval-show", big, "--max-mb", 100).returncode == 0  # the limit is the user's to raise


def test_hand_edited_recorded_turns_name_the_run_not_a_traceback(tmp_path):
    data = good_result()
    data["runs"][0]["recording"] = {"turns": [{"steps": "not a list"}, 7], "blobs": {}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    out = cireil("eval-show", path, "r0")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith(f"cireil: error: {path}: run r0: ")


# -- terminal-safe output ---------------------------------------------------------------------------------


def test_eval_show_and_compare_print_no_escape_sequences(tmp_path):
    report = hostile_report()
    report.write_json(tmp_path / "a.json")
    worse = hostile_report()
    worse.results[1].status = "fail"
    worse.results[0].status = "fail"
    better = hostile_report()
    for r in better.results:
        r.status = "pass"
    better.write_json(tmp_path / "b.json")
    outs = [
        cireil("eval-show", tmp_path / "a.json"),
        cireil("eval-show", tmp_path / "a.json", "r0"),
        cireil("eval-show", tmp_path / "a.json", "nothing-like-it"),
        cireil("eval-compare", tmp_path / "a.json", tmp_path / "b.json"),
        cireil("eval-show", tmp_path / f"missing{EVIL[:20]}.json"),
    ]
    for out in outs:
        for stream in (out.stdout, out.stderr):
            assert not any(c in stream for c in RAW), repr(stream)
        assert "Traceback" not in out.stderr
    assert "scen␛]52;c;SGVsbG8=␇" in outs[0].stdout
    # the comparison names the hostile variant visibly (its verdict on 1 run each is "not enough evidence")
    assert "not enough evidence" in outs[3].stdout and "var␛]52;c;SGVsbG8=␇" in outs[3].stdout
    assert outs[4].returncode == 2 and "missing␛]52" in outs[4].stderr


def test_the_terminal_filter_passes_the_bars_own_carriage_return():
    import io

    from cireil.runtime.base.controls import TerminalSafe
    from cireil.runtime.evals.progress import TerminalProgress

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    raw = Tty()
    bar = TerminalProgress(TerminalSafe(raw), width=4)
    report = EvalReport("agent", ["s"], ["base"], total=1)
    report.add(RunResult("r0", "s\x1b[2J", "base", 0, "notebook:eval", status="pass"))
    bar(report)
    assert raw.getvalue() == "\r[####] 1/1  1 passed  0 failed \n"
    plain = io.StringIO()
    TerminalProgress(TerminalSafe(plain))(report)
    assert plain.getvalue().startswith("[1/1] PASS s␛[2J [base #1]")


def test_report_paths_are_strings_a_terminal_can_take(tmp_path):
    # a lone surrogate (a non-UTF-8 file name) in what is printed is escaped, never an encoding traceback
    data = good_result()
    data["runs"][0]["scenario"] = "caf\udce9"
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))  # json escapes it as \udce9
    out = cireil("eval-show", path)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "caf\\xe9" in out.stdout


def test_every_command_prints_through_the_one_filter_and_json_stays_json(tmp_path, agent_dir):
    (agent_dir / "workspace" / "before\x1b]52;c;SGk=\x07\x1b[2J\x9b\x7f\u202eafter.txt").write_text("x")
    out = cireil("call", agent_dir, "list-dir", '{"path": "/workspace"}')
    assert out.returncode in (0, 1), out.stderr
    for stream in (out.stdout, out.stderr):
        assert not any(c in stream for c in (*RAW, "\u202e")), repr(stream)
    assert "before" in json.dumps(strict_json(out.stdout))  # still JSON, the controls as \\uXXXX escapes
    usage = cireil("eval-show", "r.json", "--\x1b]52;c;SGk=\x07")  # argparse echoes what it refuses
    assert usage.returncode == 2 and "--␛]52;c;SGk=␇" in usage.stderr
    assert not any(c in usage.stderr for c in RAW)


def test_an_unwritable_result_path_is_one_line_not_a_traceback(tmp_path, agent_dir):
    write(tmp_path / "evals" / "pinned.toml", PINNED)
    out = cireil("eval", agent_dir, tmp_path / "evals", "--junit", tmp_path / "no" / "such" / "dir" / "r.xml")
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert out.stderr.strip().splitlines()[-1].startswith("cireil: error: cannot write ")
