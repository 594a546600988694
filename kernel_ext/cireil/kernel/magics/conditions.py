"""conditions.toml in the notebook: choose what the rules see of a session, and show what they decide.

`%cireil session [NAME] --channel discord --guild ID --nsfw` makes the rules evaluate the session as if
it ran there, so a person can test what the agent would see and be allowed in that channel;
`--channel notebook` (or `--as-is`) goes back to the session's own platform. `%cireil context` and
`%cireil prompt` add a table of the rules: which hold, which blocks they add, which paths they deny.
"""

from __future__ import annotations

from argparse import Namespace
from dataclasses import dataclass
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from ...render.html import ERROR, FG_DIM, LINED, MONO, OK, esc, frame, table
from ..views.base import View

if TYPE_CHECKING:
    from ...runtime.agent import Agent
    from ...runtime.sessions.conditions import RuleContext
    from ...runtime.sessions.state import Session

_CLEAR = object()


def rule_options(o: Namespace) -> RuleContext | object | None:
    """The RuleContext `%cireil session`'s options ask for (commands.py declares them), _CLEAR for --as-is or
    --channel notebook, None when no option was given."""
    from ...runtime.sessions.conditions import CHANNELS, RuleContext

    ids = {k: v for k, v in (("--guild", o.guild), ("--channel-id", o.channel_id), ("--parent", o.parent)) if v}
    if o.as_is:
        if ids or o.channel or o.nsfw:
            raise UsageError("--as-is goes alone: it drops what the rules were told about the session")
        return _CLEAR
    if not ids and not o.channel and not o.nsfw:
        return None
    channel = o.channel or ("discord" if ids or o.nsfw else "notebook")
    if channel not in CHANNELS:
        raise UsageError(f"--channel must be one of {', '.join(CHANNELS)} (got {channel!r})")
    if channel != "discord" and (ids or o.nsfw):
        raise UsageError("--guild, --channel-id, --parent and --nsfw describe Discord: use them with --channel discord")
    if o.nsfw and ("--guild" not in ids or "--parent" in ids):
        raise UsageError("--nsfw needs --guild and no --parent: DMs and threads are never NSFW in the original")
    for key, value in ids.items():
        if not value.isdigit():
            raise UsageError(f"{key} takes a Discord id, digits only (got {value!r})")
    if channel == "notebook":
        return _CLEAR
    return RuleContext(channel, guild=o.guild, channel_id=o.channel_id, parent_id=o.parent, nsfw=o.nsfw)


def apply_rule_options(agent: Agent, acting: RuleContext | object | None) -> None:
    if acting is None:
        return
    agent.act_as(None if acting is _CLEAR else acting)  # type: ignore[arg-type]


@dataclass
class ConditionsView(View):
    """The rules of config/conditions.toml as one session sees them."""

    agent: Agent
    session: Session

    def _rows(self) -> tuple[str, list[tuple[str, str, bool]]]:
        agent = self.agent
        ctx = agent.rule_context(self.session)
        acting = " (set with %cireil session)" if agent._acting.get(self.session.id) else ""
        rows: list[tuple[str, str, bool]] = []
        conditions = agent.conditions
        for rule in conditions.blocks:
            holds = rule.holds(ctx)
            exists = (agent.directory / "blocks" / "conditional" / f"{rule.key}.md").is_file()
            outcome = ("adds " if exists else "would add (file missing) ") if holds else "does not add "
            rows.append((rule.describe(), outcome + rule.target, holds and exists))
        for kind in ("memories", "workspace"):
            for rule in conditions.paths[kind]:
                path = rule.target.rstrip("/") or rule.target
                decision = conditions.decide(path, ctx)
                verdict = "allowed" if decision.allowed else "DENIED"
                rows.append((rule.describe(), f"{path}: {verdict}", decision.allowed))
        return f"rules see: {ctx.describe()}{acting}", rows

    def text(self) -> str:
        if self.agent.conditions.empty:
            return "config/conditions.toml: no rules (every path allowed, no conditional block)"
        head, rows = self._rows()
        lines = [f"config/conditions.toml: {head}"]
        lines += [f"  {rule}  ->  {outcome}" for rule, outcome, _ in rows]
        return "\n".join(lines)

    def html(self) -> str:
        if self.agent.conditions.empty:
            return frame("conditions", esc(self.text()), title="conditions")
        head, rows = self._rows()
        cells = [(esc(rule), (esc(outcome), f"color:{OK if good else ERROR}")) for rule, outcome, good in rows]
        return frame(
            "conditions",
            f'<div style="color:{FG_DIM}">{esc(head)}</div>{table(cells, cell=f"{LINED};font-family:{MONO}")}',
            title="config/conditions.toml",
        )


def conditions_view(agent: Agent, session: Session | None = None) -> ConditionsView | None:
    """The view, or None when there is nothing to say (no rules and nothing set for the session)."""
    session = session or agent.session
    if agent.conditions.empty and session.id not in agent._acting:
        return None
    return ConditionsView(agent, session)
