"""Agents wired to a ScriptedLLM on loopback, for the turn-loop tests."""

from __future__ import annotations

from pathlib import Path

from conftest import make_agent

TURN_TOOLS = """\
respond = true
no-response = true
read = true
write = true
list-dir = true
session-info = true
open-file = true
schedule = true
invoke = true
read-session = true
list-sessions = true
query-sessions = true
react = true
read-history = true
download-attachments = true
prune-boundaries = true
"""


def engine_toml(base_url: str, *, keys: str = '"sk-test"', extra: str = "", model_extra: str = "") -> str:
    return (
        "[local]\n"
        f'apiBase = "{base_url}"\n'
        f"apiKey = {keys}\n"
        'defaultModel = "scripted-1"\n'
        "isGlobalDefault = true\n"
        f"{extra}"
        '\n[local.models."scripted-1"]\n'
        f"{model_extra}"
    )


def turn_agent(root: Path, base_url: str, *, tools: str = TURN_TOOLS, **engine: str) -> Path:
    agent = make_agent(root, tools)
    (agent / "config" / "engine.toml").write_text(engine_toml(base_url, **engine))
    (agent / "workspace" / "notes.md").write_text("# Notes\n\nBuy milk.\n")
    return agent
