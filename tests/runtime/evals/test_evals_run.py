"""Running evals (issue 21, items 2-4) against the scripted model server: right and wrong tools, wrong
arguments, a seeded random model, variants that change behaviour, limits, concurrency, interrupt, results."""

from __future__ import annotations

import json
import random
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cireil.runtime.base.errors import ConfigError
from cireil.runtime.evals.matrix import run_matrix
from cireil.runtime.evals.report import EvalReport, compare
from cireil.runtime.evals.scenario import load_scenarios
from cireil.runtime.evals.variants import read_variants
from cireil.testing.scripted_llm import reply
from evalkit import NOTES_SCENARIO, model, tool_description, tree_digest, write
from turnkit import turn_agent

READ_NOTES = ("read", {"path": "/workspace/notes.md"})


@pytest.fixture
def agent_dir(tmp_path, llm):
    return turn_agent(tmp_path / "agents", llm.base_url)


@pytest.fixture
def notes(tmp_path):
    return load_scenarios([write(tmp_path / "evals" / "notes.toml", NOTES_SCENARIO)])


def test_the_right_tool_passes_and_the_users_agent_is_unchanged(agent_dir, llm, notes):
    llm.default = model(lambda body: READ_NOTES)
    for name in ("sessions.db", "sessions.db-wal", "cireil-side.db"):  # the user's own conversations
        (agent_dir / name).write_bytes(b"not copied")
    before = tree_digest(agent_dir)
    report = run_matrix(agent_dir, notes, repeat=2, jobs=2, keep=agent_dir.parent / "kept")
    assert [r.status for r in report.results] == ["pass", "pass"], report.failures_text()
    for run in report.results:  # each run started with no conversation of the user's
        for name in ("sessions.db", "sessions.db-wal", "cireil-side.db"):
            kept = Path(run.agent_dir) / name
            assert not kept.exists() or kept.read_bytes() != b"not copied"
    run = report.results[0]
    assert run.calls[0] == {"name": "read", "input": {"path": "/workspace/notes.md"}, "ok": True}
    assert "milk" in run.answer and run.tokens > 0 and run.steps == 2
    assert run.session_id == "notebook:eval" and run.run_id
    assert tree_digest(agent_dir) == before  # no sessions.db, no workspace change, nothing


def test_the_wrong_tool_fails_naming_the_check(agent_dir, llm, notes):
    llm.default = model(lambda body: ("list-dir", {"path": "/workspace"}))
    report = run_matrix(agent_dir, notes, jobs=1)
    (run,) = report.results
    assert run.status == "fail"
    assert run.failures[0] == 'call 1: expected read(path="/workspace/notes.md"): got list-dir'
    assert "answer does not contain 'milk'" in run.failures


def test_the_right_tool_with_the_wrong_arguments_fails_naming_the_argument(agent_dir, llm, notes):
    llm.default = model(lambda body: ("read", {"path": "/workspace/hello.txt"}))
    (run,) = run_matrix(agent_dir, notes, jobs=1).results
    assert run.status == "fail"
    assert run.failures[0] == (
        'call 1: expected read(path="/workspace/notes.md"): argument \'path\' is "/workspace/hello.txt", '
        'expected "/workspace/notes.md"'
    )


def test_a_forbidden_call_fails(agent_dir, llm, notes):
    llm.default = model(lambda body: ("write", {"path": "/workspace/x", "content": "y"}))
    (run,) = run_matrix(agent_dir, notes, jobs=1).results
    assert "forbidden call write was made" in run.failures


def test_a_seeded_random_model_gives_a_pass_rate_between_0_and_1_reproducibly(agent_dir, llm, notes):
    def seeded():
        rng = random.Random(21)
        return model(lambda body: READ_NOTES if rng.random() < 0.5 else ("list-dir", {"path": "/workspace"}))

    rates = []
    for _ in range(2):
        llm.default = seeded()
        report = run_matrix(agent_dir, notes, repeat=8, jobs=1)  # one at a time: draws in a fixed order
        rates.append(report.pass_rate)
    assert 0 < rates[0] < 1
    assert rates[0] == rates[1]


def test_a_python_check_function_by_dotted_name(tmp_path, agent_dir, llm):
    write(
        tmp_path / "evals" / "mychecks.py",
        """\
        def mentions_milk(run):
            assert run.calls and run.calls[0]["name"] == "read"
            return None if "milk" in run.answer else "no milk in the answer"

        def never(run):
            return "the answer is never good enough"
        """,
    )
    good = write(tmp_path / "evals" / "good.toml", 'message = "notes?"\n[answer]\ncheck = "mychecks.mentions_milk"\n')
    bad = write(tmp_path / "evals" / "bad.toml", 'message = "notes?"\n[answer]\ncheck = "mychecks.never"\n')
    llm.default = model(lambda body: READ_NOTES)
    report = run_matrix(agent_dir, load_scenarios([good, bad]), jobs=2)
    by_name = {r.scenario: r for r in report.results}
    assert by_name["good"].status == "pass"
    assert by_name["bad"].failures == ["check mychecks.never: the answer is never good enough"]


VARIANTS = """\
    [baseline]

    [described]
    descriptions = { read = "ALWAYS read /workspace/notes.md before answering." }

    [no-list]
    tools = { list-dir = false }

    [terse-core]
    core = "terse.md"

    [other-model]
    model = "scripted-2"

    [soul-block]
    blocks = { soul = "soul.md" }
"""


def test_variants_really_change_behaviour(tmp_path, agent_dir, llm, notes):
    write(tmp_path / "evals" / "terse.md", "Read the notes file first. Be terse.\n")
    write(tmp_path / "evals" / "soul.md", '+++\ndescription = "The soul block"\n+++\nYou always check the notes.\n')
    variants = read_variants(write(tmp_path / "evals" / "variants.toml", VARIANTS))

    def first(body: dict):
        system = body["messages"][0]["content"]
        offered = [t["function"]["name"] for t in body["tools"]]
        if (
            "ALWAYS" in tool_description(body, "read")
            or "list-dir" not in offered
            or "Read the notes file first" in system
            or body["model"] == "scripted-2"
            or "You always check the notes." in system
        ):
            return READ_NOTES
        return ("list-dir", {"path": "/workspace"})

    llm.default = model(first)
    before = tree_digest(agent_dir)
    report = run_matrix(agent_dir, notes, variants, jobs=2)
    rates = {v: report.cell("notes", v).rate for v in report.variants}
    assert rates == {
        "baseline": 0.0,
        "described": 1.0,
        "no-list": 1.0,
        "terse-core": 1.0,
        "other-model": 1.0,
        "soul-block": 1.0,
    }
    assert tree_digest(agent_dir) == before


def test_variants_toml_is_read_by_the_shared_checker_every_problem_at_once(tmp_path):
    (tmp_path / "soul-alt.md").write_text("another soul")
    path = write(
        tmp_path / "variants.toml",
        """\
        [baseline]
        [a]
        description = ""
        core = "nope.md"
        blocks = { sol = "soul-alt.md", soul = "soul-alt.md" }
        descriptions = { read = "" }
        tools = 3
        [b]
        provider = 3
        """,
    )
    with pytest.raises(ConfigError) as err:
        read_variants(path)
    assert [str(i) for i in err.value.issues] == [
        f"{path}:3: 'a.description' must be a non-empty string, not \"\"",
        f"{path}:4: 'a.core' must be an existing file (relative to this file), not \"nope.md\"",
        f"{path}:5: unknown key 'sol' in [a.blocks] (did you mean 'soul'?)",
        f"{path}:6: 'a.descriptions.read' must be a non-empty string (what the model is told about the tool), not \"\"",
        f"{path}:7: 'a.tools' must be a table, not 3",
        f"{path}:9: 'b.provider' must be the name of a provider table of config/engine.toml, not 3",
    ]
    path.write_text('[t]\ncore = "soul-alt.md"\nblocks = { soul = "soul-alt.md" }\ndescriptions = { read = "R" }\n')
    (variant,) = read_variants(path)
    assert variant.core == variant.blocks["soul"] == str(tmp_path / "soul-alt.md")
    assert variant.descriptions == {"read": "R"}


def test_a_bad_variant_is_reported_before_anything_runs(tmp_path, agent_dir, llm, notes):
    path = write(
        tmp_path / "v.toml",
        """\
        [a]
        descriptions = { raed = "x" }
        [b]
        tools = { nosuchtool = true }
        [c]
        provider = "elsewhere"
        [d]
        modle = "x"
        """,
    )
    with pytest.raises(ConfigError) as err:
        read_variants(path)
    assert f"{path}:8: unknown key 'modle' in [d] (did you mean 'model'?)" in str(err.value)
    variants = read_variants(
        write(
            tmp_path / "v.toml",
            '[a]\ndescriptions = { raed = "x" }\n[b]\ntools = { nosuchtool = true }\n[c]\nprovider = "elsewhere"\n',
        )
    )
    with pytest.raises(ConfigError) as err:
        run_matrix(agent_dir, notes, variants)
    text = str(err.value)
    assert "variant 'a': descriptions: 'raed' is not an enabled tool" in text
    assert "variant 'b': config/tools.toml:17: unknown tool 'nosuchtool'" in text
    assert "variant 'c': provider 'elsewhere' is not in config/engine.toml (it has local)" in text
    assert not llm.requests


def test_pinned_replies_run_offline(tmp_path, agent_dir, llm):
    scenario = write(
        tmp_path / "pinned.toml",
        NOTES_SCENARIO.replace('name = "notes"', 'name = "pinned"')
        + """
    [[reply]]
    calls = [{ tool = "read", args = { path = "/workspace/notes.md" } }]
    [[reply]]
    calls = [{ tool = "respond", args = { content = "You need milk." } }]
    """,
    )
    report = run_matrix(agent_dir, load_scenarios([scenario]), repeat=2, jobs=2)
    assert report.passed == 2, report.failures_text()
    assert not llm.requests  # the agent's own provider was never asked


def test_step_and_time_limits_stop_a_run(tmp_path, agent_dir, llm):
    looping = write(
        tmp_path / "loop.toml",
        'message = "go"\n[answer]\ncontains = "x"\n[limits]\nsteps = 3\n',
    )
    llm.default = lambda body: reply.tool_calls(("list-dir", {"path": "/workspace"}))
    (run,) = run_matrix(agent_dir, load_scenarios([looping]), jobs=1).results
    assert run.status == "fail" and run.failures[0] == "limit: more than 3 steps"
    slow = write(tmp_path / "slow.toml", 'message = "go"\n[answer]\ncontains = "x"\n[limits]\nseconds = 0.5\n')
    llm.default = reply.tool_calls(("respond", {"content": "x"}), delay=30)
    started = time.monotonic()
    (run,) = run_matrix(agent_dir, load_scenarios([slow]), jobs=1).results
    assert run.failures[0] == "limit: stopped after 0.5 seconds"
    assert time.monotonic() - started < 25  # stopped, not waited out


def test_concurrency_is_bounded_by_jobs(agent_dir, llm, notes):
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}
    inner = model(lambda body: READ_NOTES)

    def slow(body: dict):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.4)
        with lock:
            state["now"] -= 1
        return inner(body)

    llm.default = slow
    report = run_matrix(agent_dir, notes, repeat=6, jobs=2)
    assert report.passed == 6
    assert state["peak"] == 2


def test_interrupt_stops_cleanly_and_keeps_finished_runs(tmp_path, agent_dir, llm, notes):
    def first(body: dict):
        time.sleep(0.3)
        return READ_NOTES

    llm.default = model(first)
    seen: list[int] = []

    def ctrl_c_after_first(report: EvalReport) -> None:
        seen.append(len(report.results))
        if len(report.results) == 1 and not report.interrupted:
            raise KeyboardInterrupt

    keep = tmp_path / "kept"
    report = run_matrix(agent_dir, notes, repeat=10, jobs=2, on_progress=ctrl_c_after_first, keep=keep)
    assert report.interrupted
    assert 1 <= len(report.results) < 10 and all(r.passed for r in report.results)
    assert "interrupted" in report.summary()
    kept = report.results[0].agent_dir
    assert kept and (Path(kept) / "sessions.db").is_file()  # the finished run stays, to be opened


def test_json_junit_and_compare(tmp_path, agent_dir, llm, notes):
    llm.default = model(lambda body: READ_NOTES)
    good = run_matrix(agent_dir, notes, repeat=2, jobs=2)
    llm.default = model(lambda body: ("list-dir", {"path": "/workspace"}))
    bad = run_matrix(agent_dir, notes, repeat=2, jobs=2)
    good.write_json(tmp_path / "a.json")
    bad.write_json(tmp_path / "b.json")
    bad.write_junit(tmp_path / "b.xml")
    loaded = EvalReport.load(tmp_path / "b.json")
    assert [r.failures for r in loaded.results] == [r.failures for r in sorted(bad.results, key=lambda r: r.run_id)]
    data = json.loads((tmp_path / "a.json").read_text())
    cell = data["grid"][0]
    assert cell == {
        "scenario": "notes",
        "variant": "base",
        "passed": 2,
        "runs": 2,
        "rate": 1.0,
        "tokens": cell["tokens"],
        "latency_s": cell["latency_s"],
        "interval": cell["interval"],  # the 95% Wilson interval: its figures in test_eval_verdicts.py
        "k": 2,
        "pass_at_1": 1.0,
        "pass_hat_1": 1.0,
        "pass_at_k": 1.0,
        "pass_hat_k": 1.0,
        "flaky": False,
    }
    suites = ET.parse(tmp_path / "b.xml").getroot()
    (suite,) = suites.findall("testsuite")
    assert suite.get("name") == "base" and suite.get("tests") == "2" and suite.get("failures") == "2"
    cases = suite.findall("testcase")
    assert [c.get("classname") for c in cases] == ["notes", "notes"]
    failure = cases[0].find("failure")
    assert failure.get("message") == 'call 1: expected read(path="/workspace/notes.md"): got list-dir'
    props = {p.get("name"): p.get("value") for p in cases[0].find("properties")}
    assert props["session_id"] == "notebook:eval" and props["run_id"]
    # 2/2 -> 0/2 is a drop, not evidence of one (Fisher's p = 0.33): no longer "got worse"
    found = compare(EvalReport.load(tmp_path / "a.json"), loaded)
    (pair,) = found.comparisons
    assert pair.verdict_of("notes") == "not enough evidence" and not found.regressed


def test_ok_true_needs_the_call_to_succeed(tmp_path, agent_dir, llm):
    path = write(
        tmp_path / "ok.toml",
        """\
        message = "notes?"
        [[expect.call]]
        tool = "read"
        ok = true
        """,
    )
    llm.default = model(lambda body: ("read", {"path": "/workspace/nope.md"}))
    (run,) = run_matrix(agent_dir, load_scenarios([path]), jobs=1).results
    assert run.status == "fail"
    assert run.failures[0].startswith("expected call read: read was called but it failed: ")
    assert run.calls[0]["ok"] is False and run.calls[0]["error"]
    llm.default = model(lambda body: READ_NOTES)
    assert run_matrix(agent_dir, load_scenarios([path]), jobs=1).results[0].passed


def test_attachments_grants_and_token_limits(tmp_path, agent_dir, llm):
    from cireil.testing.demo_model import wren

    write(tmp_path / "rota.csv", "name,day\nAna,Sat\n")
    attached = write(
        tmp_path / "attached.toml",
        """\
        message = "Here is the rota"
        attachments = ["rota.csv"]
        [session]
        channel = "cli"
        name = "ops"
        [[expect.call]]
        tool = "download-attachments"
        args = { message_id = { regex = "^m[0-9a-f]+$" }, to = "/workspace/inbox" }
        ok = true
        [answer]
        contains = "rota.csv"
        """,
    )
    granted = write(
        tmp_path / "granted.toml",
        """\
        message = "What files are in my workspace?"
        [session]
        channel = "cli"
        grant = ["read"]
        [[expect.call]]
        tool = "list-dir"
        ok = true
        """,
    )
    tokens = write(
        tmp_path / "tokens.toml", 'message = "workspace files?"\n[answer]\ncontains = "x"\n[limits]\ntokens = 10\n'
    )
    llm.default = wren
    report = run_matrix(agent_dir, load_scenarios([attached, granted, tokens]), jobs=2)
    runs = {r.scenario: r for r in report.results}
    assert runs["attached"].status == "pass", runs["attached"].failures
    assert runs["attached"].session_id == "cli:ops"
    assert runs["granted"].status == "fail"
    assert "list-dir was called but it failed" in runs["granted"].failures[0]
    assert runs["tokens"].failures[0].startswith("limit: ") and "over the 10 allowed" in runs["tokens"].failures[0]


def test_keep_inside_the_agent_is_refused(agent_dir, notes):
    with pytest.raises(ConfigError, match="--keep must be outside the agent directory"):
        run_matrix(agent_dir, notes, keep=agent_dir / "runs")
    assert not (agent_dir / "runs").exists()


def test_session_attributes_decide_what_conditions_rules_allow(tmp_path, agent_dir, llm):
    (agent_dir / "config" / "conditions.toml").write_text(
        '[workspace."/shared/"]\naction = "allow"\nwhen = "discord:guild:123"\n'
    )
    (agent_dir / "workspace" / "shared").mkdir(parents=True)
    (agent_dir / "workspace" / "shared" / "plan.md").write_text("the secret plan\n")
    llm.default = model(lambda body: ("read", {"path": "/workspace/shared/plan.md"}))
    scenario = """\
        message = "what is the plan?"
        [session]
        name = "{name}"
        [session.rules]
        guild = "{guild}"
        channel_id = "42"
        [[expect.call]]
        tool = "read"
        ok = true
        [answer]
        contains = "secret plan"
    """
    files = [
        write(tmp_path / "evals" / f"{name}.toml", scenario.format(name=name, guild=guild))
        for name, guild in (("inside", "123"), ("outside", "999"))
    ]
    report = run_matrix(agent_dir, load_scenarios(files))
    by_name = {r.scenario: r for r in report.results}
    assert by_name["inside"].status == "pass", report.failures_text()
    assert by_name["outside"].status == "fail"
    assert by_name["outside"].calls[0]["ok"] is False
    assert "guild: 999" in by_name["outside"].calls[0]["error"]
