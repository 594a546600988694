"""The original's JS plugins in tests: Node 22 from originalkit's install, plugins written here, plugin-github.

from jskit import js, original_install  # noqa: F401  (fixtures)

def test_x(js, tmp_path):                       # fixture `js`: a JsKit, or the test skips with one line
    agent = js.root(tmp_path, plugins='[[plugins]]\\nname = "p"\\n', tools="t = true\\n")
    js.plugin(agent, "p", TOOLS)                # <root>/plugins/p/{package.json,index.mjs,node_modules/}
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from cireil.runtime.plugins import jsplugins
from conftest import make_agent

# A plugin module of the contract, written as a person would (definePlugin is the identity, so the SDK is
# needed only for what it exports: KeyPool, ToolError); its schemas are valibot's, as the SDK's `vb` is.
# `TOOLS` is the body of the tools object: `"name": {description, parameters, async execute(input, ctx)}`.
PLUGIN = """\
import * as vb from "valibot";
{prelude}
export default () => ({{
  name: {name},
  tools: {{
{tools}
  }},
  extractors: {extractors},
}});
"""


@dataclass
class JsKit:
    node: Path
    checkout: Path

    @property
    def modules(self) -> Path:
        """node_modules with tsx and @valibot/to-json-schema (the original's runtime package has both)."""
        return self.checkout / "packages" / "runtime" / "node_modules"

    @property
    def sdk(self) -> Path:
        return self.checkout / "packages" / "sdk"

    @property
    def github(self) -> Path:
        return self.checkout / "packages" / "plugin-github"

    def root(self, tmp_path: Path, plugins: str, tools: str) -> Path:
        """An agent in a runtime root whose plugins.toml says `plugins`."""
        root = tmp_path / "root"
        (root / "config").mkdir(parents=True, exist_ok=True)
        (root / "config" / "plugins.toml").write_text(plugins)
        return make_agent(root / "agents", tools, name="a")

    def plugin(
        self,
        agent: Path,
        folder: str,
        tools: str,
        *,
        name: str | None = None,
        extractors: str = "[]",
        prelude: str = "",
        sdk: bool = False,
    ) -> Path:
        """A local plugin folder <root>/plugins/<folder>/ whose module is PLUGIN with these tools."""
        where = agent.parents[1] / "plugins" / folder
        (where / "node_modules").mkdir(parents=True, exist_ok=True)
        (where / "node_modules" / "valibot").symlink_to((self.modules / "valibot").resolve())
        if sdk:  # the plugin's peer dependency, as pnpm install would link it
            (where / "node_modules" / "@cireilclaw").mkdir(exist_ok=True)
            (where / "node_modules" / "@cireilclaw" / "sdk").symlink_to(self.sdk)
        package = {"name": f"plugin-{folder}", "type": "module", "main": "./index.mjs"}
        (where / "package.json").write_text(json.dumps(package))
        source = PLUGIN.format(
            name=json.dumps(name or folder),
            prelude=textwrap.dedent(prelude),
            tools=textwrap.indent(textwrap.dedent(tools), "    "),
            extractors=extractors,
        )
        (where / "index.mjs").write_text(source)
        return where


# -- fixtures (imported by the test modules that use them) -------------------------------------------------
@pytest.fixture(scope="session")
def original_install():
    import originalkit

    try:
        return originalkit.install()
    except originalkit.OriginalUnavailable as exc:
        pytest.skip(f"Node 22 is not available for the JS plugin tests: {exc}")


@pytest.fixture
def js(original_install, monkeypatch):
    kit = JsKit(node=original_install.node, checkout=original_install.checkout)
    monkeypatch.setenv("CIREIL_NODE", str(kit.node))
    monkeypatch.setenv("CIREIL_PLUGIN_MODULES", str(kit.modules))
    yield kit
    jsplugins.shutdown()  # every test's workers end with it
