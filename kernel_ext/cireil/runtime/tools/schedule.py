"""schedule: a one-shot job that runs a prompt in its own internal session later (reference §4.19)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from ..base.errors import ToolError
from ..base.params import Params, String
from ..toolkit.tool import Tool, ToolContext

_ID = re.compile(r"[a-z0-9-]+\Z")


def parse_at(text: str) -> datetime:
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        raise ToolError("Invalid ISO 8601 timestamp in `at`", hint="Example: 2026-05-01T12:00:00+02:00") from None
    if at.tzinfo is None:  # a time without offset means the local time of the runtime
        at = at.astimezone()
    return at


ID_MESSAGE = "ID must be lowercase alphanumeric with hyphens"


def _check_id(value: str) -> str | None:
    return None if _ID.match(value) else ID_MESSAGE


async def run(args: dict, ctx: ToolContext) -> dict:
    at = parse_at(args["at"])
    if at <= datetime.now(UTC):
        raise ToolError("`at` must be in the future")
    conversation = ctx.conversation
    if conversation is None or conversation.host is None:
        raise ToolError("schedule needs a running agent", hint="Load the agent with cireil.load or %cireil load.")
    target = args.get("target") or "current"
    if target == "current":
        target = ctx.session.id
    job = {
        "delivery": args.get("delivery") or "announce",
        "enabled": True,
        "execution": "isolated",
        "id": args["id"],
        "prompt": args["prompt"],
        "schedule": {"at": at.isoformat()},
        "target": target,
    }
    conversation.host.schedule(job)
    # reference: no `success` key upstream; §9 allows adding it and the breaker then treats it as any success
    return {"at": at.isoformat(), "id": job["id"], "scheduled": True, "success": True}


TOOL = Tool(
    name="schedule",
    description="Schedule a one-shot task to run at a specific time in the future.",
    # As the original sends them: delivery and target carry no description (its schema converter stops at the
    # transform that fills their defaults); run() fills the same defaults.
    params=Params(
        at=String(
            min_length=1,
            description="ISO 8601 timestamp for when to run (e.g. 2026-02-20T15:00:00Z). Must be in the future.",
        ),
        delivery=String(enum=("announce", "none"), nullable=True, required=False),
        id=String(
            min_length=1,
            pattern="^[a-z0-9-]+$",
            pattern_message=ID_MESSAGE,
            check=_check_id,  # the pattern's `$` as JSON Schema means it: no final newline either
            description=(
                "Unique slug-format identifier for this job (e.g. meeting-reminder). Lowercase alphanumeric with "
                "hyphens."
            ),
        ),
        prompt=String(min_length=1, description="The instruction to execute at the scheduled time."),
        target=String(min_length=1, nullable=True, required=False),
    ),
    run=run,
)
