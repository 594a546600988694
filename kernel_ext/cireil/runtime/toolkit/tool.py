"""What a tool is, what it is given when it runs, and how any outcome becomes a result dict."""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..base.errors import ToolError
from ..base.names import clean as escape_names
from ..base.params import Object

if TYPE_CHECKING:
    from ..config.sandbox_config import SandboxConfig
    from ..config.tools_config import ToolsConfig
    from ..files.paths import SandboxPaths
    from ..sessions.state import Session
    from .conversation import Conversation

Runner = Callable[[dict, "ToolContext"], Awaitable[dict]]
# Live output of a running call, e.g. exec's ("stdout" | "stderr", raw bytes); called on the runtime loop.
Progress = Callable[[str, bytes], None]


# What a successful call does to the file named by its `path` (the result's, else the argument's):
# "reads" shows the file as it was then, "changes" makes an earlier read of it stale; "" neither.
PathEffect = Literal["", "reads", "changes"]
# When a call ends the agent's turn: "success" when its result succeeds and does not say `final: false`
# (respond), "always" whatever the result (no-response, reference §8.3); "" never.
TurnEnd = Literal["", "success", "always"]


@dataclass(frozen=True)
class SpecDifference:
    """One way a tool's definition, as the model receives it, differs from the original CireilClaw's, and the
    spec rule that makes it differ. Everywhere else a built-in's name, description and parameter schema are the
    original's byte for byte (issue 28): `cireil tools --diff-original` lists these, and the peer test
    (tests/peer/test_tool_definitions.py) checks them against the original's own output."""

    # the part of the wire definition that differs: "tool" (it exists on one side only), "description", or a
    # JSON path into the parameters' schema, e.g. "parameters.properties.input"
    where: str
    what: str  # how it differs, one line
    rule: str  # the spec section (and reference row) that causes it
    when: str = ""  # the tools.toml condition under which it shows ("" = always), e.g. "edit = false"

    def as_dict(self) -> dict:
        return {"where": self.where, "what": self.what, "rule": self.rule, "when": self.when}


def python_name(tool: str) -> str:
    """A tool's name where Python needs an identifier: its module (and view module) and its magic.
    `read-skill` -> `read_skill`."""
    return tool.replace("-", "_")


def no_progress(stream: str, data: bytes) -> None:
    """The default: nobody is watching."""


@dataclass(frozen=True)
class Tool:
    """One tool: the registry entry every surface (magic, form, CLI, engine) is generated from."""

    name: str
    description: str
    params: Object
    run: Runner
    main_arg: str | None = None  # the argument a bare word fills: `%cireil_list_dir /workspace`
    body_arg: str | None = None  # the argument a cell body fills: `%%cireil_write PATH` + content
    origin: str = "built-in"
    # rewrites raw arguments before validation (accepting a legacy argument form); None = as given
    prepare: Callable[[Any], Any] | None = None
    # builds the arguments from a cell's line and body when the body is richer than one argument
    # (edit's SEARCH/REPLACE blocks); raises ValueError with a one-line message for malformed input
    parse_body: Callable[[str, str], dict] | None = None
    rest_arg: str | None = None  # the list further bare words fill, verbatim: `%cireil_exec ls -la /workspace`
    # What the engine asks the tool instead of keeping lists of names; plugin and MCP tools default to nothing special.
    path_effect: PathEffect = ""
    ends_turn: TurnEnd = ""
    breakable: bool = True  # False: the failure breaker never disables it (a turn must always be able to end)
    # True: a session's grant never withholds it; a grant that left out every way to end the turn would leave the
    # model no way to finish (respond, no-response)
    always_granted: bool = False
    # False: never offered to the model (a stand-in for a plugin tool that did not load): the person sees it
    # with why in every listing, and a call fails with that reason; a model would only waste a step on it
    offered: bool = True
    # Where this built-in's definition departs from the original's, each with its spec rule (empty: identical)
    spec_differences: tuple[SpecDifference, ...] = ()

    def __post_init__(self) -> None:
        for field_name, kind in (("path_effect", PathEffect), ("ends_turn", TurnEnd)):
            value, allowed = getattr(self, field_name), get_args(kind)
            if value not in allowed:  # a typo would otherwise silently mean "nothing special"
                choices = ", ".join(repr(a) for a in allowed)
                raise ValueError(f"tool '{self.name}': {field_name} must be one of {choices}, not {value!r}")

    def __repr__(self) -> str:
        return f"<Tool {self.name} ({self.origin})>"

    @cached_property
    def parameters(self) -> dict:
        """JSON Schema of the parameters, exactly as the model would receive it (made once: every
        model request of a turn sends it again). Treat it as read-only."""
        return self.params.schema()

    @property
    def magic_name(self) -> str:
        return "cireil_" + python_name(self.name)

    def ends_turn_with(self, data: dict) -> bool:
        """Whether a call that returned `data` ends the turn."""
        if self.ends_turn == "always":
            return True
        return self.ends_turn == "success" and data.get("success") is not False and data.get("final") is not False

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "origin": self.origin,
        }


def describe_parameters(schema: dict) -> list[str]:
    """One line per parameter, `name (type, required|optional): description`, for help texts."""
    properties: dict = schema.get("properties", {})
    if not properties:
        return ["(no parameters)"]
    required = set(schema.get("required", ()))
    lines = []
    for name, prop in properties.items():
        kind = prop.get("type") or "any"
        kind = "|".join(kind) if isinstance(kind, list) else kind
        text = f"{name} ({kind}, {'required' if name in required else 'optional'})"
        if prop.get("description"):
            text += f": {prop['description']}"
        lines.append(text)
    return lines


@dataclass
class ToolContext:
    """Everything a tool may use during one call; a snapshot of the turn it belongs to."""

    agent_dir: Path
    slug: str
    paths: SandboxPaths
    sandbox: SandboxConfig
    tools_config: ToolsConfig
    session: Session
    extra: dict[str, Any] = field(default_factory=dict)
    progress: Progress = no_progress  # set by a caller that shows output live (magics, widget forms)
    conversation: Conversation | None = None  # the store and the turn, for the conversation tools


async def execute(tool: Tool, args: Any, ctx: ToolContext) -> dict:
    """Validate, run, and turn every failure into the result dict the agent would see (reference §3).

    Cancellation is not a failure: it propagates so that the caller's interrupt stays an interrupt.
    Non-UTF-8 names in the result come out escaped (`names.clean`): it must survive JSON and sqlite.
    """
    return escape_names(await _execute(tool, args, ctx))


async def _execute(tool: Tool, args: Any, ctx: ToolContext) -> dict:
    if tool.prepare is not None:
        args = tool.prepare(args)
    clean, issues = tool.params.validate(args if args is not None else {})
    if issues:
        return {"error": str(issues[0]), "issues": [i.as_dict() for i in issues], "success": False}
    try:
        result = await tool.run(clean, ctx)
    except asyncio.CancelledError:
        raise
    except ToolError as exc:
        out: dict[str, Any] = {"error": ctx.paths.scrub(exc.message)}
        if exc.hint:
            out["hint"] = ctx.paths.scrub(exc.hint)
        out["success"] = False
        return out
    except Exception as exc:  # a tool bug or an OS error: still a result, never a leak into the cell
        message = _describe_exception(exc)
        return {"error": ctx.paths.scrub(message), "success": False}
    if not isinstance(result, dict):
        return {"error": f"tool '{tool.name}' returned {type(result).__name__}, not an object", "success": False}
    return result


def _describe_exception(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        parts = [exc.strerror]
        if exc.filename:
            parts.append(f"'{exc.filename}'")
        return ": ".join(parts)
    text = str(exc) or type(exc).__name__
    if not str(exc):
        frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        if frame:
            text += f" (at {Path(frame[0].filename).name}:{frame[0].lineno})"
    return text
