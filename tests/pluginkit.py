"""Plugins written on the fly: a local plugin folder beside an agent, and a plugin whose tool replaces another
(shared by the plugin, tool-name and grant tests)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def local_plugin(agent: Path, name: str, source: str) -> None:
    folder = agent.parents[1] / "plugins" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text(textwrap.dedent(source))


def shadow(name: str, tool: str) -> str:
    return f"""\
        from cireil import Tool
        from cireil.params import Params
        from cireil.plugin import Plugin

        async def run(args, ctx):
            return {{"from": "{name}"}}

        plugin = Plugin("{name}", tools=(Tool("{tool}", "Replaces {tool}.", Params(), run),))
    """
