"""Mutation pass over the spec-rule tests: break one rule's code, run that rule's tests, expect a failure.

    ./dev mutate                 every mutation (slow: minutes; not part of `./dev test`)
    ./dev mutate --list          the mutations and the rules they break
    ./dev mutate ID [ID ...]     only these
    ./dev mutate --check         only check that every mutation still applies to the code (fast)

A mutation "survives" when the tests pass with the rule broken: that rule has no test that can fail.
Each mutation replaces one exact snippet, which must occur exactly once in its file (so an edit of the code
shows up here as "stale" instead of silently testing nothing). Files are restored after every mutation,
also on Ctrl-C or SIGTERM; a copy of the original is kept beside the git metadata until then, and a run
that was killed outright (SIGKILL, power loss) is repaired by the next run before anything else.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "kernel_ext/cireil/runtime/"


@dataclass(frozen=True)
class Mutation:
    id: str
    rule: str  # the spec's rule (or the issue's) that the mutation breaks
    file: str  # relative to the repository root
    find: str
    replace: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, -k expressions


def m(id: str, rule: str, file: str, find: str, replace: str, *tests: str) -> Mutation:
    return Mutation(id, rule, file if file.startswith(("kernel_ext/", "tests/")) else PKG + file, find, replace, tests)


MUTATIONS: tuple[Mutation, ...] = (
    # -- tools.toml ---------------------------------------------------------------------------------
    m(
        "tools-required",
        "tools.toml is required",
        "agent_config.py",
        'issues.append(ConfigIssue(TOOLS_FILE, None, "required file is missing"))',
        "pass",
        "tests/runtime/config/test_config_tools.py",
        "tests/runtime/test_agent.py",
    ),
    m(
        "tools-boolean",
        "each tool is enabled with a boolean",
        "config/tools_config.py",
        "        elif check.value(where, value, params.Boolean())[0]:\n",
        "        elif True:  # any value taken, none reported\n",
        "tests/runtime/config/test_config_tools.py",
    ),
    m(
        "tools-unknown-even-false",
        "unknown tool names are rejected during dry-run and startup, even when their value is false",
        "config/tools_config.py",
        "        elif name not in known:\n",
        "        elif name not in known and value is not False:\n",
        "tests/runtime/config/test_config_tools.py",
        "tests/runtime/mcp/test_mcp_agent.py::test_mcp_tools_must_be_enabled_by_name",
    ),
    m(
        "exec-true",
        "exec = true enables execution with the defaults",
        "config/tools_config.py",
        "return ExecConfig(enabled=value)",
        "return ExecConfig(enabled=False)",
        "tests/runtime/config/test_config_tools.py",
    ),
    m(
        "exec-binaries-not-in-table",
        "the binary entrypoint list belongs in sandbox.toml, not in the exec table",
        "config/tools_config.py",
        "    check.unknown(value, list(_EXEC_FIELDS),",
        '    check.unknown({k: v for k, v in value.items() if k != "binaries"}, list(_EXEC_FIELDS),',
        "tests/runtime/config/test_config_tools.py",
    ),
    m(
        "exec-default-timeout",
        "exec timeout defaults to 60000 ms",
        "config/tools_config.py",
        "    timeout: int = 60000\n",
        "    timeout: int = 30000\n",
        "tests/runtime/config/test_config_tools.py",
    ),
    m(
        "exec-default-threshold",
        "inlineThresholdBytes defaults to 16384",
        "config/tools_config.py",
        "inlineThresholdBytes: int = 16384",
        "inlineThresholdBytes: int = 8192",
        "tests/runtime/config/test_config_tools.py",
        "tests/runtime/exec/test_exec_tool.py",
    ),
    m(
        "tools-reload",
        "changes to tools.toml are picked up by the running runtime and apply to subsequent turns",
        "agent.py",
        "            if all(current[rel] == old.fingerprints[rel] for rel in WATCHED):",
        "            if True:",
        "tests/runtime/engine/test_turns.py::test_tools_toml_is_re_read_at_turn_start",
        "tests/runtime/mcp/test_mcp_reload.py",
    ),
    m(
        "turn-keeps-its-tools",
        "an in-progress turn keeps the tool set it started with",
        "engine/turn.py",
        "        tool = self.tools.get(name)\n",
        "        tool = (self.agent.refresh_quietly(), self.agent.current_tools())[1].get(name)\n",
        "tests/runtime/mcp/test_mcp_reload.py",
    ),
    # -- exec ---------------------------------------------------------------------------------------
    m(
        "exec-line-length",
        "maxPreviewLineLength: long preview lines are elided with a marker",
        "exec/preview.py",
        "    if line.chars <= max_chars and len(text) <= max_chars and line.size == len(line.prefix):",
        "    if True:",
        "tests/runtime/exec/test_exec_preview.py",
        "tests/runtime/exec/test_exec_tool.py",
    ),
    m(
        "exec-deadline",
        "the command timeout remains active while writing input and draining output",
        "exec/process.py",
        "        if await _wait(watch.exited, deadline - loop.time()):",
        "        if await _wait(watch.exited, 3600):",
        "tests/runtime/exec/test_exec_tool.py",
        "-k",
        "timeout",
    ),
    m(
        "exec-group-kill",
        "a background child that inherits output handles cannot make collection wait (the group dies)",
        "exec/process.py",
        "            _kill_group(pgid)  # background children die with their parent",
        "            pass",
        "tests/runtime/exec/test_exec_tool.py",
        "-k",
        "background",
    ),
    m(
        "exec-bounded-drain",
        "a background child that inherits output handles cannot make collection wait (bounded drain)",
        "exec/process.py",
        "await _wait(watch.drained, min(DRAIN_S, deadline - loop.time()))",
        "await _wait(watch.drained, deadline - loop.time())",
        "tests/runtime/exec/test_exec_tool.py",
        "-k",
        "background",
    ),
    m(
        "exec-timeout-keeps-stdout",
        "a timeout reports failure and retains stdout captured before the deadline",
        "exec/exec_result.py",
        'out.update(inline=True, stdout=capture.inline_text("stdout"),',
        'out.update(inline=True, stdout="" if outcome.timed_out else capture.inline_text("stdout"),',
        "tests/runtime/exec/test_exec_tool.py",
        "-k",
        "timeout",
    ),
    m(
        "exec-cancel-propagates",
        "cancellation of the calling turn propagates as cancellation, not a successful result",
        "exec/process.py",
        "            await _wait(watch.drained, _REAP_S)\n        raise\n",
        "            await _wait(watch.drained, _REAP_S)\n        timed_out = True\n",
        "tests/runtime/exec/test_exec_limits.py",
        "-k",
        "cancelling",
    ),
    m(
        "exec-fallback-truncated",
        "fallbackInline: truncated says whether content was omitted",
        "exec/exec_result.py",
        "out.update(fallbackInline=True, truncated=truncated)",
        "out.update(fallbackInline=True, truncated=False)",
        "tests/runtime/exec/test_exec_tool.py",
        "-k",
        "fallback or falls",
    ),
    # -- built-in tools -----------------------------------------------------------------------------
    m(
        "builtin-invoke",
        "the built-in tool list includes invoke",
        "toolkit/registry.py",
        '    "invoke",\n',
        "",
        "tests/runtime/tools/test_tools_builtin.py",
        "tests/runtime/config/test_config_tools.py",
    ),
    m(
        "str-replace-removed",
        "2.0.0 removes str-replace",
        "config/tools_config.py",
        "        elif name in REMOVED_TOOLS:\n",
        "        elif False:\n",
        "tests/runtime/config/test_config_tools.py",
    ),
    m(
        "str-replace-migration",
        "migration to edit preserves whether editing was enabled",
        "config/migrate.py",
        "        enabled = current or old\n",
        "        enabled = current\n",
        "tests/runtime/config/test_migrate.py",
    ),
    m(
        "edit-frontmatter",
        "edit preserves frontmatter of block and skill files and searches only the body",
        "tools/edit.py",
        "    parts = frontmatter.split(text, kind) if kind else None\n",
        "    parts = None\n",
        "tests/runtime/edit/test_edit_tool.py",
    ),
    m(
        "edit-apply-checks-file",
        "apply checks that the complete original file, frontmatter included, is unchanged",
        "tools/edit.py",
        "    if current != preview.original:\n",
        "    if False:\n",
        "tests/runtime/edit/test_edit_tool.py",
    ),
    m(
        "outline-link-labels",
        "Markdown section ids use link labels rather than link destinations",
        "outline/markdown.py",
        "        heading = Heading(label, to_slug(label),",
        "        heading = Heading(label, to_slug(tokens[index + 1].content),",
        "tests/runtime/outline/test_outline.py",
        "tests/runtime/engine/test_context.py",
    ),
    m(
        "outline-setext",
        "setext headings are supported when the file has no ATX headings",
        "outline/markdown.py",
        "    return atx or setext\n",
        "    return atx + setext\n",
        "tests/runtime/outline/test_outline.py",
    ),
    m(
        "section-span",
        "a pinned section includes child headings, stops before the next heading of the same or higher level",
        "outline/pipeline.py",
        "        while open_ and headings[open_[-1]].level >= heading.level:",
        "        while open_ and headings[open_[-1]].level > heading.level:",
        "tests/runtime/outline/test_outline.py",
        "tests/runtime/engine/test_context.py",
    ),
    m(
        "session-info-internal",
        'named persistent internal sessions report platform = "internal"',
        "sessions/state.py",
        '    if session_id.startswith(("internal:", "cron:")):',
        '    if session_id.startswith("cron:"):',
        "tests/runtime/tools/test_tools_builtin.py",
        "-k",
        "session_info",
    ),
    m(
        "session-info-remote",
        'adapter-owned sessions report platform = "remote"',
        "sessions/state.py",
        '        return "tui"\n    return "remote"\n',
        '        return "tui"\n    return "internal"\n',
        "tests/runtime/tools/test_tools_builtin.py",
        "-k",
        "session_info",
    ),
    m(
        "read-size-cap",
        "read rejects text files larger than 262144 bytes, also with raw",
        "tools/read.py",
        "    if found.size > READ_LIMIT:",
        "    if found.size > 2 * READ_LIMIT:",
        "tests/runtime/tools/test_read.py",
    ),
    m(
        "read-media-exempt",
        "image and video reads use their media handling rather than the text limit",
        "tools/read.py",
        "    kind = media_kind(found.resolved.sandbox)\n    if kind is not None:\n",
        "    kind = media_kind(found.resolved.sandbox)\n    if kind is not None and found.size <= READ_LIMIT:\n",
        "tests/runtime/tools/test_read.py",
    ),
    m(
        "read-binary",
        "issue 16: read refuses binary files that are not media",
        "tools/read.py",
        "    refuse_binary(path, len(data), data)\n",
        "",
        "tests/runtime/tools/test_read.py",
    ),
    m(
        "read-heic",
        "issue 16: .heic is a picture, as upstream's media types say",
        "files/media.py",
        '    ".heic": "image/heic",\n',
        "",
        "tests/runtime/tools/test_read_media.py",
    ),
    m(
        "read-jpeg",
        "issue 16: useJpegForImages sends pictures as JPEG",
        "engine/openai.py",
        "        messages = [_jpeg_images(m) for m in messages]\n",
        "        pass\n",
        "tests/runtime/tools/test_read_media.py",
    ),
    m(
        "read-session-thinking",
        "read-session cuts thinking at 200 characters and appends … (truncated)",
        "toolkit/conversation_tools.py",
        '        return f"[thinking: {text[:THINKING_LIMIT]}{TRUNCATED}]"',
        '        return f"[thinking: {text[:THINKING_LIMIT]}]"',
        "tests/runtime/toolkit/test_conversation_tools.py",
    ),
    # -- plugins ------------------------------------------------------------------------------------
    m(
        "plugin-enabled-by-name",
        "plugin tools must be enabled in tools.toml by name",
        "agent_config.py",
        "    tools = {name: _resolve(name, extra, mcp_tools) for name in tools_cfg.enabled_names}",
        "    tools = {name: _resolve(name, extra, mcp_tools) for name in [*tools_cfg.enabled_names, *[n for n in"
        " extra if n not in tools_cfg.enabled]]}",
        "tests/runtime/plugins/test_plugins.py",
    ),
    m(
        "plugin-allow-override",
        "a plugin tool replaces a built-in only with allowOverride",
        "plugins/loader.py",
        "        if tool.name in registry.BUILTIN_NAMES and not entry.allow_override:",
        "        if False:",
        "tests/runtime/plugins/test_plugins.py",
    ),
    m(
        "plugin-no-mcp-shadow",
        "collisions fail startup rather than overwriting another tool (plugin over MCP)",
        "plugins/loader.py",
        "        clash = reserved_clash(tool.name, mcp_tools)\n",
        "        clash = None\n",
        "tests/runtime/toolkit/test_tool_names.py",
    ),
    m(
        "python-no-mcp-shadow",
        "collisions fail startup rather than overwriting another tool (Python over MCP)",
        "agent_config.py",
        "        clash = reserved_clash(tool.name)\n",
        "        clash = None\n",
        "tests/runtime/toolkit/test_tool_names.py",
    ),
    # -- MCP ----------------------------------------------------------------------------------------
    m(
        "mcp-url-scheme",
        "each server entry requires an HTTP or HTTPS url",
        "config/urlcheck.py",
        '    if parts.scheme not in ("http", "https") or not parts.netloc:',
        "    if not parts.netloc:",
        "tests/runtime/config/test_config_mcp.py",
    ),
    m(
        "mcp-timeout-positive",
        "timeout is a positive deadline in milliseconds",
        "config/mcp_config.py",
        '"timeout": params.Integer(minimum=1, default=DEFAULT_TIMEOUT_MS,',
        '"timeout": params.Integer(minimum=0, default=DEFAULT_TIMEOUT_MS,',
        "tests/runtime/config/test_config_mcp.py",
    ),
    m(
        "mcp-timeout-default",
        "MCP timeout defaults to 60000",
        "config/mcp_config.py",
        "DEFAULT_TIMEOUT_MS = 60000",
        "DEFAULT_TIMEOUT_MS = 30000",
        "tests/runtime/config/test_config_mcp.py",
    ),
    m(
        "mcp-call-deadline",
        "timeout covers connection and discovery together, and separately each tool call",
        "mcp/client.py",
        "            async with asyncio.timeout(self.timeout_s):",
        "            async with asyncio.timeout(None):",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "timeout",
    ),
    m(
        "mcp-timeout-no-proof",
        "a timeout does not prove that the remote operation had no effect (the error says so)",
        "mcp/client.py",
        " (the remote operation may still have taken effect)",
        "",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "past_its_timeout",
    ),
    m(
        "mcp-cancel-propagates",
        "cancellation of the calling turn propagates to MCP",
        "mcp/transport.py",
        "                await self._cancel(rid)\n            raise\n",
        "                await self._cancel(rid)\n            return {}\n",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "cancel",
    ),
    m(
        "mcp-transport-headers",
        "transport-owned headers cannot be overridden",
        "config/mcp_config.py",
        '    return lower in TRANSPORT_HEADERS or lower.startswith("mcp-")',
        "    return False",
        "tests/runtime/config/test_config_mcp.py",
    ),
    m(
        "mcp-redirects",
        "HTTP redirects are rejected instead of forwarding credentials",
        "mcp/transport.py",
        "        if 300 <= code < 400:",
        "        if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "redirect",
    ),
    m(
        "mcp-credential-file",
        "protect mcp.toml as a credential when it contains secrets (warned about at load)",
        "config/mcp_config.py",
        "    if not mode & (stat.S_IRGRP | stat.S_IROTH):\n",
        "    if True:\n",
        "tests/runtime/config/test_config_mcp.py",
    ),
    m(
        "mcp-server-names",
        "server names allow letters, digits, - and _, but not double underscores",
        "config/mcp_config.py",
        '    if not _SERVER_NAME.match(name) or "__" in name:',
        "    if not _SERVER_NAME.match(name):",
        "tests/runtime/config/test_config_mcp.py",
    ),
    m(
        "mcp-name-sanitising",
        "remote name characters outside letters, digits, - and _ become underscores",
        "mcp/naming.py",
        "{server}__{_UNSAFE.sub('_', remote)}",
        "{server}__{remote}",
        "tests/runtime/mcp/test_mcp_agent.py",
    ),
    m(
        "mcp-remote-name",
        "calls still use the original remote name",
        "mcp/discovery.py",
        "            result = await client.call(remote, args, spill)",
        "            result = await client.call(name, args, spill)",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "discovered_called",
    ),
    m(
        "mcp-collisions",
        "local-name collisions fail startup",
        "mcp/discovery.py",
        "        if name in remote_of or name in found.tools:",
        "        if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "colliding",
    ),
    m(
        "mcp-64",
        "local names longer than 64 characters fail startup",
        "mcp/discovery.py",
        "        if len(name) > MAX_NAME:",
        "        if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "64",
    ),
    m(
        "mcp-instructions",
        "tool descriptions include the server's usage instructions",
        "mcp/discovery.py",
        "    if client.instructions:",
        "    if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "discovered_called",
    ),
    m(
        "mcp-structured",
        "results preserve structured content as JSON",
        "mcp/client.py",
        '        if "structuredContent" in result:',
        "        if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "discovered_called or structured",
    ),
    m(
        "mcp-iserror",
        "remote isError results become success = false",
        "mcp/client.py",
        '        if result.get("isError") is True:',
        "        if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "discovered_called",
    ),
    m(
        "mcp-init-failure",
        "a configured server that cannot initialize or list tools prevents startup",
        "mcp/discovery.py",
        "            found.issues.append(issue_at(client.server, f\"server '{client.server.name}': {listing}\"))",
        "            pass",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "initialize or redirect",
    ),
    m(
        "mcp-fixed-until-restart",
        "connections and discovered definitions remain fixed until restart",
        "agent.py",
        "                mcp_servers=old.mcp_servers,  # MCP definitions stay fixed until restart\n"
        "                mcp=old.mcp,",
        "                mcp_servers=None,\n                mcp=None,",
        "tests/runtime/mcp/test_mcp_agent.py::test_definitions_stay_fixed_until_restart",
        "tests/runtime/mcp/test_mcp_reload.py",
    ),
    m(
        "mcp-toml-needs-restart",
        "changes to mcp.toml require a restart (and the person is told)",
        "agent.py",
        "            if current[MCP_FILE] != old.fingerprints[MCP_FILE]:",
        "            if False:",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "fixed",
    ),
    m(
        "mcp-dry-run-closes",
        "dry-run connects and discovers but does not call (and leaves no session behind)",
        "agent_config.py",
        "        close_mcp(snapshot.mcp)  # dry-run discovers, never calls",
        "        pass",
        "tests/runtime/mcp/test_mcp_agent.py",
        "-k",
        "dry_run",
    ),
    m(
        "grant-filter",
        "remote-session grants filter enabled tools (MCP as harness tools)",
        "agent.py",
        "        return {name: tool for name, tool in self._snapshot.tools.items() if session.allows(tool)}",
        "        return dict(self._snapshot.tools)",
        "tests/runtime/sessions/test_grants.py",
    ),
    m(
        "grant-authorize",
        "remote-session grants authorize calls of enabled tools (MCP as harness tools)",
        "agent.py",
        "        if not ctx.session.allows(tool):",
        "        if False:",
        "tests/runtime/sessions/test_grants.py",
    ),
)


# -- running ----------------------------------------------------------------------------------------
def _backup_dir() -> Path:
    """Beside the git metadata (never tracked, shared by the worktree's runs); a cache folder without git."""
    try:
        found = subprocess.run(
            ["git", "rev-parse", "--git-path", "cireil-mutate"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        return (ROOT / found).resolve()
    except (OSError, subprocess.CalledProcessError):
        digest = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"cireil-mutate-{digest}"


BACKUPS = _backup_dir()


def _restore_leftovers() -> list[str]:
    """Put back files a killed run left mutated; returns their paths."""
    restored = []
    if BACKUPS.is_dir():
        for saved in sorted(BACKUPS.glob("*.orig")):
            target = ROOT / saved.read_text(encoding="utf-8").splitlines()[0]
            data = saved.with_suffix(".data").read_bytes()
            target.write_bytes(data)
            saved.with_suffix(".data").unlink()
            saved.unlink()
            restored.append(str(target.relative_to(ROOT)))
    return restored


class _Applied:
    """A mutation applied to its file; restores the original on exit, whatever happened."""

    def __init__(self, mutation: Mutation) -> None:
        self.mutation = mutation
        self.path = ROOT / mutation.file
        key = hashlib.sha256(mutation.file.encode()).hexdigest()[:16]
        self.marker, self.saved = BACKUPS / f"{key}.orig", BACKUPS / f"{key}.data"

    def __enter__(self) -> _Applied:
        original = self.path.read_bytes()
        BACKUPS.mkdir(parents=True, exist_ok=True)
        self.saved.write_bytes(original)  # first the copy, then the marker that says it is complete
        self.marker.write_text(self.mutation.file + "\n", encoding="utf-8")
        self.original = original
        text = original.decode("utf-8")
        self.path.write_text(text.replace(self.mutation.find, self.mutation.replace, 1), encoding="utf-8")
        return self

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.original)
        self.marker.unlink(missing_ok=True)
        self.saved.unlink(missing_ok=True)


def stale(mutation: Mutation) -> str | None:
    """Why the mutation cannot be applied as written, or None."""
    path = ROOT / mutation.file
    if not path.is_file():
        return f"{mutation.file} does not exist"
    count = path.read_text(encoding="utf-8").count(mutation.find)
    return None if count == 1 else f"the snippet occurs {count} times in {mutation.file} (expected once)"


def run_tests(mutation: Mutation, timeout_s: int) -> tuple[int, str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "kernel_ext"), os.environ.get("PYTHONPATH")])),
    }
    argv = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f"--timeout={timeout_s}"]
    argv += ["-W", "ignore::pytest.PytestUnraisableExceptionWarning", *mutation.tests]
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    tail = [line for line in done.stdout.splitlines() if line.strip()][-1:] or ["(no output)"]
    return done.returncode, tail[0]


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="mutation ids (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--check", action="store_true", help="only check that every mutation applies")
    parser.add_argument("--timeout", type=int, default=120, help="per-test timeout in seconds (default 120)")
    args = parser.parse_args(argv)
    for path in _restore_leftovers():
        print(f"restored {path}, left mutated by an interrupted run")
    by_id = {mu.id: mu for mu in MUTATIONS}
    unknown = [i for i in args.ids if i not in by_id]
    if unknown:
        parser.error(f"unknown mutation id(s): {', '.join(unknown)} (see --list)")
    chosen = [by_id[i] for i in args.ids] if args.ids else list(MUTATIONS)
    if args.list:
        for mu in chosen:
            print(f"{mu.id:28} {mu.rule}")
        return 0
    problems = {mu.id: why for mu in chosen if (why := stale(mu))}
    for mu_id, why in problems.items():
        print(f"STALE     {mu_id}: {why}")
    if args.check:
        return 1 if problems else 0
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    survived, errors = [], []
    started = time.monotonic()
    try:
        for mu in chosen:
            if mu.id in problems:
                continue
            with _Applied(mu):
                code, tail = run_tests(mu, args.timeout)
            if code == 0:
                verdict = "SURVIVED"
                survived.append(mu)
            elif code == 1:
                verdict = "killed"
            else:  # 2 interrupted/collection error, 3 internal, 4 usage, 5 nothing collected
                verdict = f"ERROR({code})"
                errors.append(mu)
            print(f"{verdict:9} {mu.id:28} {tail}", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: the mutated file was restored", file=sys.stderr)
        return 130
    minutes = (time.monotonic() - started) / 60
    print(
        f"\n{len(chosen) - len(problems)} mutations in {minutes:.1f} min: {len(survived)} survived, "
        f"{len(errors)} errors, {len(problems)} stale"
    )
    for mu in survived:
        print(f"  no failing test for: {mu.rule} ({mu.id})")
    return 1 if survived or errors or problems else 0


if __name__ == "__main__":
    sys.exit(main())
