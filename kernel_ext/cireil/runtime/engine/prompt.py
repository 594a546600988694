"""The system prompt (reference §7.1) and the metadata message (§7.3), rebuilt for every model call."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..base.errors import CireilError, ConfigError, ConfigIssue
from ..files import frontmatter, safefs
from ..files.layout import BLOCK_NAMES, AgentLayout
from ..files.paths import read_agent_file
from ..sessions.rowids import meta_for_new
from ..sessions.state import Session
from .timefmt import current_date_line

if TYPE_CHECKING:
    from ..sessions.conditions import ConditionalBlock, Conditions, Rule, RuleContext

WARNING_REMAINING_RATIO = 0.05
PRUNE_WARNED_KEY = "prune_warned_at"

# Skill frontmatter is YAML, the slow part of a rebuild; (path) -> (mtime_ns, size, fields or error).
_skill_cache: dict[str, tuple[int, int, dict | str]] = {}


@dataclass
class SystemPrompt:
    text: str
    skills: list[str] = field(default_factory=list)  # slugs listed, in order
    warnings: list[str] = field(default_factory=list)  # skills left out, and why
    rule_context: RuleContext | None = None  # what conditions.toml rules saw of the session
    rules: list[Rule] = field(default_factory=list)  # the block rules that held, in file order
    conditional: list[ConditionalBlock] = field(default_factory=list)  # the blocks they loaded

    def __str__(self) -> str:
        return self.text


def _read(directory: Path, rel: str, issues: list[ConfigIssue], missing: str) -> str | None:
    try:
        return safefs.read_host_file(directory / rel).decode("utf-8")  # a FIFO here must not hang a turn
    except FileNotFoundError:
        issues.append(ConfigIssue(rel, None, missing))
    except (OSError, UnicodeDecodeError) as exc:
        issues.append(ConfigIssue(rel, None, f"cannot be read: {exc}"))
    return None


def _block_lines(label: str, description: str, body: str, file_path: str, conditional: bool = False) -> list[str]:
    return [
        f"<{label}>",
        "<description>",
        description.strip(),
        "</description>",
        "<metadata>",
        f"- chars_current: {len(body)}",
        f"- file_path: {file_path}",
        *(["- conditional: true"] if conditional else []),
        "</metadata>",
        "<content>",
        body.strip(),
        "</content>",
        f"</{label}>",
        "",
    ]


def _skill_fields(directory: Path, path: Path) -> dict | str:
    """The frontmatter fields, or why the skill is left out."""
    try:
        info = path.stat()
    except OSError as exc:
        return f"cannot be read: {exc}"
    key = str(path)
    cached = _skill_cache.get(key)
    if cached is not None and cached[:2] == (info.st_mtime_ns, info.st_size):
        return cached[2]
    try:
        # skills are writable from exec: maybe a FIFO, or a symlink to a host file
        text = read_agent_file(directory, path.relative_to(directory).as_posix()).decode("utf-8")
        result: dict | str = frontmatter.parse(text, frontmatter.SKILL)
    except (frontmatter.FrontmatterError, OSError, UnicodeDecodeError) as exc:
        result = f"invalid frontmatter: {exc}"
    _skill_cache[key] = (info.st_mtime_ns, info.st_size, result)
    return result


def _skill_lines(directory: Path, prompt: SystemPrompt) -> list[str]:
    skills_dir = directory / "skills"
    if not skills_dir.is_dir():
        return []
    lines: list[str] = []
    for entry in sorted(skills_dir.iterdir(), key=lambda p: p.name):
        skill_file = entry / "SKILL.md"
        if not skill_file.is_file():
            continue
        fields = _skill_fields(directory, skill_file)
        if isinstance(fields, str):
            prompt.warnings.append(f"skills/{entry.name}/SKILL.md: {fields}; skill omitted")
            continue
        prompt.skills.append(entry.name)
        lines += [f'<skill slug="{entry.name}">', f"<description>{fields['description']}</description>", "</skill>"]
    return ["<skills>", *lines, "</skills>"] if lines else []


DISCORD_META_KEYS = ("channelId", "guildId", "parentChannelId", "isNsfw")


def discord_meta(session: Session) -> dict[str, Any]:
    """What the original knows of a Discord session's channel: channelId, guildId, parentChannelId, isNsfw.

    From its id (`discord:<channelId>|<guildId>`, or `discord:<channelId>` for a DM), then the meta of its row
    in sessions.db (the original writes parentChannelId and isNsfw there), then what was set on the session
    in memory (session.meta, which conditions.toml's rules read too)."""
    meta: dict[str, Any] = dict(meta_for_new(session.id))
    stored = (session.store_state or {}).get("meta")
    for source in (stored if isinstance(stored, dict) else {}, session.meta):
        meta.update((key, source[key]) for key in DISCORD_META_KEYS if source.get(key) is not None)
    return meta


def _discord_lines(session: Session) -> list[str]:
    """The channel lines of the original's system prompt for a Discord session (engine/system-prompt.ts)."""
    meta = discord_meta(session)
    lines = [f"The channel id is: {meta.get('channelId', '')}"]
    if meta.get("parentChannelId"):  # a thread: its forum or channel
        lines.append(f"The parent forum/channel id is: {meta['parentChannelId']}")
    if not meta.get("guildId"):  # a DM
        lines.append("SFW/NSFW depending on the user")
    else:
        lines.append(f"This is considered a {'NSFW' if meta.get('isNsfw') is True else 'SFW'} session")
    return lines


def _platform_lines(session: Session, slug: str) -> tuple[list[str], bool]:
    """The lines after the platform line, and whether the platform has reactions and attachments."""
    platform = session.platform
    if platform == "remote":
        return ["This is a notebook session with your person through cireil (Jupyter)."], True
    if platform == "internal":
        if session.id.startswith("cron:"):
            # the original's job id is <agentSlug>:<jobId> (upstream-formats §0), and the line shows it whole
            return [f"This is an internal cron session (job ID: {session.id[len('cron:') :]})"], False
        return ["This is a persistent internal session"], False
    if platform == "tui":
        return ["This is a TUI session with your person. SFW/NSFW depending on their preferences."], False
    if platform == "discord":
        # as the original builds it for a turn on a Discord message, whose channel has reactions, attachments
        # and downloads (a preview only: the engine refuses turns on Discord sessions before building a request)
        return _discord_lines(session), True
    # the original has no prompt for it either: its system prompt throws "Unimplemented channel" there
    raise CireilError(
        f"session {session.id}: the original builds no system prompt for the {platform} platform (it throws "
        f"'Unimplemented channel: {platform}'), so there is no request of it to show or send"
    )


def _flag(value: bool) -> str:
    return "true" if value else "false"


def build_system_prompt(
    layout: AgentLayout,
    session: Session,
    *,
    supports_vision: bool = True,
    supports_video: bool = False,
    conditions: Conditions | None = None,
    rule_context: RuleContext | None = None,
) -> SystemPrompt:
    """Raises ConfigError when core.md or a base block is missing or invalid: no turn can run without them,
    nor with a conditional block its rule loads that has no valid frontmatter (as the original)."""
    directory = layout.directory
    issues: list[ConfigIssue] = []
    core = _read(directory, "core.md", issues, "missing: agent turns need the base instructions")
    blocks: list[tuple[str, str, str]] = []
    for name in BLOCK_NAMES:
        rel = f"blocks/{name}.md"
        text = _read(directory, rel, issues, "missing: agent turns need all five base blocks")
        if text is None:
            continue
        found = frontmatter.block_parts(text, rel, issues)
        if found is not None:
            blocks.append((name, *found))
    rules: list[Rule] = []
    conditional: list[ConditionalBlock] = []
    if conditions is not None and conditions.blocks:
        from ..sessions.conditions import RuleContext, conditional_blocks

        rule_context = rule_context or RuleContext.of_session(session)
        rules = conditions.blocks_for(rule_context)
        conditional, block_issues = conditional_blocks(directory, rules)
        issues += block_issues
    if issues:
        raise ConfigError(issues)
    assert core is not None

    prompt = SystemPrompt("", rule_context=rule_context, rules=rules, conditional=conditional)
    lines = [
        "<base_instructions>",
        core.strip(),
        "</base_instructions>",
        "<memory_blocks>",
        "The following blocks are engaged in your memory:",
        "",
    ]
    for name, description, body in blocks:
        lines += _block_lines(name, description, body, f"/blocks/{name}.md")
    for block in conditional:  # chosen by config/conditions.toml, in the file's order
        lines += _block_lines(f"conditional/{block.name}", block.description, block.body, block.file_path, True)
    lines.append("</memory_blocks>")
    lines += _skill_lines(directory, prompt)
    platform_lines, capable = _platform_lines(session, layout.slug)
    lines += [
        "<metadata>",
        f"The current session is on the platform: {session.platform}",
        *platform_lines,
        f"- reactions supported: {_flag(capable)}",
        f"- file attachments in respond supported: {_flag(capable)}",
        f"- attachment downloads supported: {_flag(capable)}",
        *([] if supports_vision else ["- vision supported: false"]),
        *([] if supports_video else ["- video supported: false"]),
        "</metadata>",
    ]
    prompt.text = "\n".join(lines)
    return prompt


@dataclass(frozen=True)
class ContextUsage:
    estimate: int
    window: int | None = None
    soft: int | None = None  # what pruning brings the request down to
    hard: int | None = None  # where pruning starts
    remaining: int | None = None  # tokens left before pruning starts

    @property
    def used_percent(self) -> float | None:
        return self.estimate / self.window * 100 if self.window else None

    @property
    def hard_percent(self) -> float | None:
        return self.hard / self.window * 100 if self.window and self.hard is not None else None

    @property
    def near_prune(self) -> bool:
        """0 < remaining ≤ 5% of the window: the agent gets a chance to save what matters."""
        if not self.window or self.remaining is None:
            return False
        return 0 < self.remaining <= int(self.window * WARNING_REMAINING_RATIO)

    def as_dict(self) -> dict[str, Any]:
        return {
            "estimate": self.estimate,
            "window": self.window,
            "soft": self.soft,
            "hard": self.hard,
            "remaining": self.remaining,
        }


def context_usage(
    estimate: int, context_window: int | None, context_budget: float = 0.6, context_hard_budget: float = 0.85
) -> ContextUsage:
    if not context_window:
        return ContextUsage(estimate)
    soft = int(context_window * context_budget)
    hard = int(context_window * context_hard_budget)
    return ContextUsage(estimate, context_window, soft, hard, hard - estimate)


def usage_line(usage: ContextUsage) -> str:
    if not usage.window:
        return (
            f"Context usage: ~{usage.estimate} tokens (context window unavailable; token-budget percentage "
            "unavailable; max-turn pruning applies)."
        )
    return (
        f"Context usage: ~{usage.estimate} / {usage.window} tokens ({usage.used_percent:.1f}% of context window; "
        f"auto-prune at {usage.hard} tokens / {usage.hard_percent:.1f}%; ~{usage.remaining} tokens remaining "
        "before auto-prune)."
    )


def prune_warning(usage: ContextUsage) -> str:
    return (
        f"Context note: the conversation window is approaching its limit (~{usage.remaining} tokens before "
        f"auto-prune). When pruning happens, older turns will be dropped to keep roughly ~{usage.soft} tokens. "
        "If anything in this conversation needs to survive, write it to a file now."
    )


def metadata_text(usage: ContextUsage, tz: tzinfo | None, now: datetime | None = None, *, warn: bool = False) -> str:
    lines = [f"Current date: {current_date_line(tz, now)}", usage_line(usage)]
    if warn:
        lines.append(prune_warning(usage))
    return "\n".join(lines)


def should_warn(session: Session, usage: ContextUsage, cursor: int) -> bool:
    """Near the prune point and not yet warned at this cursor position (the cursor moves when it prunes)."""
    return usage.near_prune and session.meta.get(PRUNE_WARNED_KEY) != cursor


def record_warning(session: Session, cursor: int) -> None:
    session.meta[PRUNE_WARNED_KEY] = cursor
