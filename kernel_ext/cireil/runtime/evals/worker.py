"""One eval run: a fresh copy of the (variant's) agent, the scenario's turns, the checks. Runs in a worker
process (or anywhere picklable arguments go); returns a plain dict so any executor can carry it back."""

from __future__ import annotations

import asyncio
import importlib
import io
import mimetypes
import shutil
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.secrets import mask
from ..files.untar import extract_all
from ..recorder.portable import TURN_LIMIT
from .matchers import check_calls, regex_search
from .scenario import PinnedReply, Scenario
from .variants import Variant, copy_agent, pin_engine

if TYPE_CHECKING:
    from ..recorder.model import RecordedTurn


@dataclass
class RunSpec:
    run_id: str
    scenario: Scenario
    variant: Variant
    repeat: int
    template: str  # the variant's prepared copy of the agent
    root: str  # where this run's own copy goes
    timeout: float  # seconds: the hard stop of the run
    keep: bool = False  # leave the run's copy (and its sessions.db) for a person to open
    # for executors on other machines: the variant's copy and the attachments travel with the run
    archive: bytes | None = None  # the template as a tar archive
    attachments: dict[str, bytes] | None = None  # path as the scenario names it -> content
    turn_limit: int = TURN_LIMIT  # bytes: a failed run's recorded turns are cut to fit


@dataclass
class RunResult:
    run_id: str
    scenario: str
    variant: str
    repeat: int
    session_id: str
    status: str = "error"  # pass | fail | error | interrupted
    failures: list[str] = field(default_factory=list)
    error: str | None = None
    tokens: int = 0
    latency_s: float = 0.0
    steps: int = 0
    calls: list[dict] = field(default_factory=list)  # {"name", "input", "ok"[, "error"]} in the order made
    answer: str = ""
    ended: str = ""
    model: str = ""
    agent_dir: str | None = None  # the kept copy, when asked for
    # a failed or erred run's recorded turns as plain data (recorder/portable.py: "turns", "blobs", "truncated"),
    # or {"problem": why there are none}; None for a run that passed
    recording: dict | None = None

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @cached_property
    def turns(self) -> list[RecordedTurn]:
        """The run's recorded turns (steps with request, reply and diff), oldest first; [] for a passed run."""
        from ..recorder.portable import unpack_turns

        return unpack_turns(self.recording)

    @property
    def truncated(self) -> str | None:
        """What was left out of the recorded turns to keep them under the cap (None: nothing was)."""
        return (self.recording or {}).get("truncated")

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> RunResult:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


@dataclass
class EvalRun:
    """What a Python check function (answer.check) is given."""

    scenario: Scenario
    variant: Variant
    answer: str
    calls: list[dict]
    outcomes: list[Any]
    agent_dir: str  # the run's copy of the agent, as the turns left it: a check may look at its files


class _Watch:
    """Follows the turn's events: the calls made, and the step and token limits (stopping the turn)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.calls: list[dict] = []
        self.steps = 0
        self.tokens = 0
        self.over: str | None = None
        self.task: asyncio.Task | None = None

    def event(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "tool":
            call = event["call"]
            self.calls.append({"name": call.get("name"), "input": call.get("input") or {}, "ok": True})
        elif kind == "result" and self.calls:
            data = getattr(event.get("result"), "data", None) or {}
            if data.get("success") is False:  # results come right after their call, in order
                self.calls[-1]["ok"] = False
                self.calls[-1]["error"] = str(data.get("error") or "")[:300]
        elif kind == "request":
            self.steps += 1
            limit = self.scenario.max_steps
            if limit is not None and self.steps > limit:
                self._stop(f"limit: more than {limit} steps")
        elif kind == "assistant":
            usage = event.get("usage") or {}
            self.tokens += int(usage.get("total_tokens") or 0)
            limit = self.scenario.max_tokens
            if limit is not None and self.tokens > limit:
                self._stop(f"limit: {self.tokens:,} tokens, over the {limit:,} allowed")

    def _stop(self, why: str) -> None:
        if self.over is None:
            self.over = why
            if self.task is not None:
                self.task.cancel()


def pack(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        tar.add(directory, arcname=".")
    return buffer.getvalue()


def unpack(data: bytes, target: Path) -> None:
    target.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        extract_all(tar, target)  # links and paths leaving target are refused, on every Python 3.11


def _to_reply(pinned: PinnedReply) -> Any:
    from ...testing.scripted_llm import reply

    if pinned.calls:
        return reply.tool_calls(*pinned.calls, text=pinned.text, reasoning=pinned.reasoning)
    return reply.text(pinned.text or "", reasoning=pinned.reasoning)


def _message(agent: Any, scenario: Scenario, text: str, attach: bool, shipped: dict[str, bytes] | None) -> dict:
    from ..sessions import messages

    message = messages.user_message(text)
    if attach and scenario.attachments:
        if agent.store is None:
            raise RuntimeError("attachments need the session store (sessions.db), which could not be opened")
        message["attachments"] = []
        for raw in scenario.attachments:
            path = Path(raw)
            media = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            data = shipped[raw] if shipped is not None else path.read_bytes()
            message["attachments"].append(
                agent.store.add_attachment(scenario.session_id, message["id"], path.name, media, data)
            )
        listed = "; ".join(f"{a['filename']} ({a['mediaType']}, {a['size']:,} bytes)" for a in message["attachments"])
        note = f"[Attached to this message (message_id {message['id']}): {listed}. download-attachments saves them.]"
        message["content"].append({"type": "text", "text": note, "note": "attachments"})
    return message


async def _drive(agent: Any, spec: RunSpec, watch: _Watch, outcomes: list, deadline: float) -> None:
    scenario, variant = spec.scenario, spec.variant
    watch.task = asyncio.current_task()
    # --timeout counts from the run's start (copying and loading the agent too): the turn gets what is left
    left = max(0.0, deadline - time.monotonic())
    limit = min(left, scenario.seconds or left)
    try:
        async with asyncio.timeout(limit):
            for n, text in enumerate(scenario.messages):
                message = _message(agent, scenario, text, n == 0, spec.attachments)
                outcomes.append(
                    await agent.aturn(message, on_event=watch.event, provider=variant.provider, model=variant.model)
                )
    except TimeoutError:
        if scenario.seconds is not None and limit >= scenario.seconds:
            watch.over = watch.over or f"limit: stopped after {limit:g} seconds"
        else:
            watch.over = watch.over or f"timed out: the run reached its --timeout of {spec.timeout:g} seconds"
    except asyncio.CancelledError:
        if watch.over is None:
            raise
        watch.task.uncancel()


def _apply_descriptions(agent: Any, variant: Variant) -> None:
    """Tool descriptions live in code, not in a file: the variant replaces them in this run's loaded agent."""
    from dataclasses import replace

    tools = agent._snapshot.tools  # the snapshot every turn of this run reads its tools from
    for name, text in variant.descriptions.items():
        tools[name] = replace(tools[name], description=text)


def _run_check(dotted: str, run: EvalRun, scenario_dir: str) -> str | None:
    module_name, _, attr = dotted.rpartition(".")
    sys.dont_write_bytecode = True  # a throwaway process: leave no __pycache__ beside the user's scenarios
    if scenario_dir not in sys.path:
        sys.path.insert(0, scenario_dir)  # a checks module beside the scenario files
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        return f"check {dotted}: cannot be imported: {exc}"
    try:
        verdict = fn(run)
    except Exception as exc:
        return f"check {dotted} raised {type(exc).__name__}: {exc}"
    if verdict is None or verdict is True:
        return None
    if verdict is False:
        return f"check {dotted} returned False"
    return f"check {dotted}: {verdict}"


def judge(spec: RunSpec, result: RunResult, watch: _Watch, outcomes: list) -> None:
    """Every check of the scenario, all reported (not only the first)."""
    scenario = spec.scenario
    failures: list[str] = []
    if watch.over:
        failures.append(watch.over)
    failures += check_calls(watch.calls, scenario.expected, scenario.order, scenario.forbidden).failures
    answer = result.answer
    for text in scenario.contains:
        if text not in answer:
            failures.append(f"answer does not contain {text!r}")
    for pattern in scenario.regex:
        if not regex_search(pattern, answer):
            failures.append(f"answer does not match /{pattern}/")
    if scenario.ended and result.ended != scenario.ended:
        failures.append(f"turn ended with {result.ended or 'nothing'}, expected {scenario.ended}")
    if scenario.check and not watch.over:
        run = EvalRun(scenario, spec.variant, answer, watch.calls, outcomes, str(Path(spec.root) / spec.run_id))
        problem = _run_check(scenario.check, run, str(Path(scenario.path).absolute().parent))
        if problem:
            failures.append(problem)
    result.failures = failures
    result.status = "fail" if failures else "pass"


def recorded(agent: Any, session_id: str, limit: int) -> dict:
    """The run's turns as its copy recorded them, packed to travel back; never fails the run."""
    from ..recorder.model import load_turns
    from ..recorder.portable import pack_turns

    recording = agent.recording
    store = recording.store
    if store is None:
        return {"problem": recording.problem or "turn recording is off"}
    try:
        return pack_turns(load_turns(store, session_id), limit)
    except Exception as exc:  # a recording that cannot be read is a note on the run, not a second failure
        return {"problem": f"the recorded turn could not be read: {type(exc).__name__}: {exc}"}


def run_one(spec: RunSpec) -> dict:
    from ..agent import Agent
    from ..base.loop import RUNTIME
    from ..recorder.recording import Recording
    from ..recorder.settings import RecorderSettings

    scenario = spec.scenario
    result = RunResult(spec.run_id, scenario.name, spec.variant.name, spec.repeat, scenario.session_id)
    unpacked = None
    if spec.archive is not None:  # this machine may not see the client's files: unpack the copy sent along
        unpacked = Path(tempfile.mkdtemp(prefix="cireil-eval-remote-"))
        unpack(spec.archive, unpacked / "template")
        spec.template = str(unpacked / "template")
        spec.root = str(unpacked)
    copy = Path(spec.root) / spec.run_id
    llm = agent = None
    watch = _Watch(scenario)
    outcomes: list = []
    started = time.perf_counter()
    deadline = time.monotonic() + spec.timeout
    try:
        copy_agent(Path(spec.template), copy)
        if scenario.replies:
            from ...testing.scripted_llm import ScriptedLLM

            llm = ScriptedLLM(*[_to_reply(r) for r in scenario.replies]).start()
            pin_engine(copy, llm.base_url)
        agent = Agent.load(copy, session=scenario.session_id)
        # recorded whatever the agent's config/cireil.toml says: a failed run's turn is what a person opens
        agent._recording = Recording(copy, RecorderSettings())
        _apply_descriptions(agent, spec.variant)
        if scenario.grant is not None:
            agent.grant(scenario.grant)
        if scenario.rules_see is not None:
            agent.act_as(scenario.rules_see)
        started = time.perf_counter()  # latency is the turns', not the copying and loading before them
        try:
            RUNTIME.run(_drive(agent, spec, watch, outcomes, deadline))
        except Exception as exc:  # the provider failed for good, a config broke: the run errs, the eval goes on
            result.error = mask(f"{type(exc).__name__}: {exc}")
        result.latency_s = time.perf_counter() - started
        result.answer = "\n\n".join(o.text for o in outcomes if o.text)
        result.ended = outcomes[-1].ended if outcomes else ""
        result.model = outcomes[-1].model if outcomes else ""
        result.steps = watch.steps
        result.tokens = watch.tokens
        result.calls = watch.calls
        if result.error is None:
            judge(spec, result, watch, outcomes)
        else:
            result.status = "error"
            result.failures = [f"turn failed: {result.error}"]
    except Exception as exc:
        result.status = "error"
        result.error = mask(f"{type(exc).__name__}: {exc}")
        result.failures = [f"run could not start: {result.error}"]
        result.latency_s = time.perf_counter() - started
    finally:
        if agent is not None:
            if result.status in ("fail", "error"):  # read before the copy goes; passed runs carry none
                result.recording = recorded(agent, scenario.session_id, spec.turn_limit)
            agent.close()
        if llm is not None:
            llm.stop()
        if spec.keep:
            result.agent_dir = str(copy)
        else:
            shutil.rmtree(copy, ignore_errors=True)
            if unpacked is not None:
                shutil.rmtree(unpacked, ignore_errors=True)
    return result.as_dict()
