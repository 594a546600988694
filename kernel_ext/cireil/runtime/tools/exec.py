"""exec: run one allowed command in the agent's sandbox (spec "The exec tool", reference §4.12)."""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from ..base.errors import ToolError
from ..base.params import Array, Params, String
from ..files.paths import SandboxPaths
from ..toolkit.tool import SpecDifference, Tool, ToolContext

if TYPE_CHECKING:
    from ..exec.sandbox import Launch, Overlay

# The exec machinery (process, capture, sandbox) is imported on the first call, not when the tool
# is registered: loading an agent stays quick (bench/load_ext.py).

_METACHARACTERS = set("\"'|&;$`\\")
METACHAR_MESSAGE = (
    "Command must be a single binary name without spaces or shell metacharacters. Use 'args' for arguments."
)


def _single_binary(command: str) -> str | None:
    if any(c.isspace() or c in _METACHARACTERS for c in command):
        return METACHAR_MESSAGE
    return None


def _no_nul(value: str) -> str | None:
    return "Arguments cannot contain NUL characters." if "\0" in value else None


def _check_allowed(command: str, ctx: ToolContext) -> None:
    if command in ctx.sandbox.binaries:
        return
    hint = None
    if "bash" in ctx.sandbox.binaries:
        hint = "To run a pipeline or a shell builtin, use command 'bash' with args ['-c', '…']."
    elif ctx.sandbox.binaries:
        hint = f"Allowed: {', '.join(ctx.sandbox.binaries)}."
    raise ToolError(f"Command '{command}' is not in sandbox.toml [bwrap] binaries.", hint=hint)


def _refuse_unenforceable(ctx: ToolContext) -> None:
    """Without a sandbox nothing can hide a denied area from the command: fail closed."""
    access = ctx.paths.access
    if access is None:
        return
    from ..sessions.conditions import PathAccess  # an agent without conditions.toml never loads the rules module

    if isinstance(access, PathAccess) and any(d for _, d in access.conditions.denied_areas(access.context)):
        raise ToolError(
            "exec cannot run here: config/conditions.toml denies paths in this session "
            f'({access.context.describe()}) and backend = "none" cannot hide them from a command.',
            hint='Use backend = "bwrap" in config/sandbox.toml.',
        )


def _launch(ctx: ToolContext, command: str, args: list[str]) -> Launch:
    from ..exec.envfile import EnvFileError, load_env_file
    from ..exec.sandbox import base_env, bwrap_launch, unsandboxed_launch

    config_paths = SandboxPaths(ctx.paths.agent_dir, ctx.paths.mounts)  # the runtime's own reads: no rules
    env_path = config_paths.resolve("/workspace/.env").host
    try:
        dotenv = load_env_file(env_path, os.environ)
    except EnvFileError as exc:
        raise ToolError(str(exc), hint=f"Edit the .env file at {env_path} to fix the variable reference.") from None
    config = ctx.tools_config.exec
    if ctx.sandbox.backend == "none":
        _refuse_unenforceable(ctx)
        home = str(config_paths.resolve("/workspace").host)
        env = base_env(config.hostEnvPassthrough, dotenv, home)
        return unsandboxed_launch(
            agent_dir=ctx.agent_dir, command=command, args=args, env=env, max_processes=config.maxProcesses
        )
    env = base_env(config.hostEnvPassthrough, dotenv, "/workspace")
    return bwrap_launch(
        agent_dir=ctx.agent_dir,
        slug=ctx.slug,
        sandbox=ctx.sandbox,
        command=command,
        args=args,
        env=env,
        max_processes=config.maxProcesses,
        overlay=_conditions_overlay(ctx),
    )


def _conditions_overlay(ctx: ToolContext) -> Overlay | None:
    """conditions.toml also holds inside the sandbox: denied areas are hidden (the original left exec open)."""
    access = ctx.paths.access
    if access is None:
        return None
    from ..sessions.conditions import PathAccess, exec_overlay

    if not isinstance(access, PathAccess):
        return None
    unguarded = SandboxPaths(ctx.paths.agent_dir, ctx.paths.mounts)
    mounted = [f"/workspace/{m.target}" for m in ctx.paths.mounts]
    return lambda binds: exec_overlay(access, unguarded.resolve, binds.bind, mounted)


async def run(args: dict, ctx: ToolContext) -> dict[str, Any]:
    config = ctx.tools_config.exec
    if not config.enabled:
        raise ToolError("Exec tool is disabled in configuration.")
    command: str = args["command"]
    argv: list[str] = list(args.get("args") or [])
    _check_allowed(command, ctx)
    launch = _launch(ctx, command, argv)
    try:
        return await _run_launch(launch, args, ctx, command)
    finally:
        launch.close()  # the bind descriptors (bwrap holds its own copies once started), the overlays' work folder


async def _run_launch(launch: Launch, args: dict, ctx: ToolContext, command: str) -> dict[str, Any]:
    from ..exec import process
    from ..exec.capture import Capture
    from ..exec.exec_result import build_result
    from ..exec.spill import SpillDir

    config = ctx.tools_config.exec
    capture = Capture(config, lambda: SpillDir(ctx.paths, config.outputDir, command))
    progress = ctx.progress

    def on_data(stream: str, data: bytes) -> None:
        capture.feed(stream, data)
        with contextlib.suppress(Exception):  # a display problem must never disturb the capture
            progress(stream, data)

    stdin = args["input"].encode("utf-8") if args.get("input") is not None else None
    try:
        outcome = await process.run(launch, stdin, config.timeout / 1000, on_data)
    except OSError as exc:  # the binary or bwrap vanished, too many processes...: reference "spawn error"
        message = str(exc.strerror or exc)
        return {
            "error": f"Command could not be started: {message}",
            "exitCode": 1,
            "stderr": message,
            "stderrLength": len(message.encode()),
            "stdout": "",
            "stdoutLength": 0,
            "success": False,
        }
    finally:
        capture.finish()
    return build_result(capture, outcome, config.timeout, launch.warning)


TOOL = Tool(
    name="exec",
    description=(
        "Run a binary inside the configured sandbox backend. The working directory is /workspace.\n\n"
        "The Bubblewrap backend exposes only binaries listed in sandbox.toml [bwrap]; Incus executes "
        "binaries installed in the container image. Returns the exit code, output lengths, and paths to the "
        "captured output.\n\n"
        "Output capture: stdout and stderr are written to files under the configured outputDir (default "
        "/workspace/.exec-output) and the tool result returns the paths, byte counts, and short head/tail "
        "previews. Read the files with `read`/`open-file` (large files automatically return an outline) or "
        "filter them with `exec grep …` when you need more context. Set `[exec] inline = true` to opt back "
        "into raw inline output (only effective when combined stdout+stderr ≤ inlineThresholdBytes, default "
        "16384).\n\n"
        "When to use:\n"
        "- Running build tools, linters, formatters, scripts, or other CLI programs.\n"
        "- Performing operations that cannot be expressed with the other file tools (e.g., grep, git, "
        "compilation).\n\n"
        "Constraints:\n"
        "- Filesystem access outside the sandbox is restricted.\n"
        "- With the default Bubblewrap backend, `/blocks` cannot be accessed using `exec`; the Incus backend "
        "mounts it read-only.\n"
        "- Commands that exceed the configured timeout are killed automatically.\n\n"
        "Tip: Use list-dir with path /bin to see which binaries are available in the sandbox.\n"
        "Tip: The `/workspace/.env` file *is* sourced and can affect your $PATH and other environment "
        "variables."
    ),
    # The original sends neither parameter's description (its schema converter stops at their transform and
    # custom check), so neither does cireil; a missing args means no arguments (run).
    params=Params(
        args=Array(items=String(min_length=1, check=_no_nul), nullable=True, required=False),
        command=String(min_length=1, check=_single_binary),
        input=String(required=False, description="Text written to the command's standard input"),
    ),
    run=run,
    main_arg="command",
    body_arg="input",
    rest_arg="args",
    spec_differences=(
        SpecDifference(
            "parameters.properties.input",
            "an optional `input` parameter: text written to the command's standard input (the original ignores stdin)",
            'spec "The exec tool": the command timeout "remains active while writing input and draining '
            'stdout/stderr" (reference §10 #5)',
        ),
    ),
)
