"""exec's overhead, throughput, memory and deadline, as ratios against baselines from the same run.

    python bench/exec.py [--runs 30] [--gib 1]

(a) `exec true` through the tool vs the same bare `bwrap ... true` argv vs bare `subprocess.run(["true"])`;
    also that argv started as the tool starts it, with the overlays that hide host paths (anon_mounts.py);
    target: the tool at most 1.3x that sandbox, its own cost shown against plain binds.
(b) a command writing 1 GiB to stdout through the tool (spilled to a file) vs `cat` writing the same
    bytes from a pipe to a file; plus the peak memory growth of the calling process (target < 32 MiB), measured
    in a fresh child process so that nothing earlier inflates the peak.
(c) `sleep 30 &` in the background, with a 2 s timeout: returns at once; and with the parent also
    sleeping, the timeout fires and the call returns in < 3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import cireil
from cireil.runtime.config.sandbox_config import SandboxConfig
from cireil.runtime.config.tools_config import ExecConfig
from cireil.runtime.exec.sandbox import base_env, bwrap_launch

# maxOutputBytes: (b) measures the spill path, so the per-call cap must not cut it short
TOOLS = "list-dir = true\n[exec]\nenabled = true\ntimeout = 2000\nmaxOutputBytes = 17179869184\n"
SANDBOX = 'backend = "bwrap"\n[bwrap]\nbinaries = ["true", "sh", "sleep", "head"]\n'


def make_agent(root: Path) -> Path:
    agent = root / "benchagent"
    for sub in ("config", "workspace", "memories", "tasks", "skills", "blocks"):
        (agent / sub).mkdir(parents=True)
    (agent / "config" / "tools.toml").write_text(TOOLS)
    (agent / "config" / "sandbox.toml").write_text(SANDBOX)
    (agent / "core.md").write_text("bench agent\n")
    return agent


def medians_ms(fns: dict, runs: int) -> dict[str, float]:
    """Median wall time of each function, interleaved so that load from elsewhere hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for fn in fns.values():
        fn()  # warm-up
    for _ in range(runs):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in times.items()}


def overhead(agent_dir: Path, runs: int) -> None:
    agent = cireil.load(agent_dir)
    common = dict(
        agent_dir=agent_dir,
        slug="benchagent",
        sandbox=SandboxConfig(binaries=("true",)),
        command="true",
        args=[],
        env=base_env((), {}, "/workspace"),
    )
    # the same sandbox the tool starts, process limit included (as root: a pid namespace of its own)
    launch = bwrap_launch(**common, max_processes=ExecConfig().maxProcesses)
    unlimited = bwrap_launch(**common)

    def hidden() -> None:
        # the whole sandbox as the tool starts it: a fresh launch (each has its own overlay work folders)
        # started through its preexec (fork, namespaces, the overlays that hide host paths)
        fresh = bwrap_launch(**common, max_processes=ExecConfig().maxProcesses)
        try:
            subprocess.run(fresh.argv, env={}, check=True, pass_fds=fresh.fds, preexec_fn=fresh.preexec)
        finally:
            fresh.close()

    found = medians_ms(
        {
            "bare": lambda: subprocess.run(["true"], check=True),
            "unlimited": lambda: subprocess.run(unlimited.argv, env={}, check=True, pass_fds=unlimited.fds),
            "bwrap": lambda: subprocess.run(launch.argv, env={}, check=True, pass_fds=launch.fds),
            "hidden": hidden,
            "captured": lambda: subprocess.run(
                launch.argv, env={}, capture_output=True, start_new_session=True, pass_fds=launch.fds
            ),
            "tool": lambda: agent.call("exec", command="true"),
        },
        runs,
    )
    bare, bwrap, captured, tool = found["bare"], found["bwrap"], found["captured"], found["tool"]
    hidden_ms = found["hidden"]
    print("(a) exec true, median of", runs)
    print(f"    bare subprocess.run(['true'])  {bare:7.2f} ms")
    print(f"    bare bwrap ... true, no limit  {found['unlimited']:7.2f} ms")
    print(f"    bare bwrap ... true            {bwrap:7.2f} ms   (with the process limit)")
    print(f"    same, output captured          {captured:7.2f} ms   (pipes + own session, as any capture needs)")
    print(
        f"    bare bwrap, host paths hidden  {hidden_ms:7.2f} ms   = {hidden_ms / bwrap:.2f}x: the overlays of "
        "anon_mounts.py (fork instead of vfork, namespaces, one overlay per folder)"
    )
    print(
        f"    tool exec true                 {tool:7.2f} ms   = {tool / hidden_ms:.2f}x that sandbox (target <= 1.3x)"
    )
    launch.close()
    unlimited.close()
    agent.close()


MEASURE = textwrap.dedent("""\
    import json, resource, sys, time
    import cireil
    agent = cireil.load(sys.argv[1])
    agent.call("exec", command="true")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    data = agent.call("exec", command="head", args=["-c", sys.argv[2], "/dev/zero"]).data
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"s": elapsed, "growth_kib": after - before, "length": data["stdoutLength"]}))
""")


def throughput(agent_dir: Path, size: int) -> None:
    tools = agent_dir / "config" / "tools.toml"
    tools.write_text(TOOLS.replace("timeout = 2000", "timeout = 600000"))  # this one is not about the deadline
    target = agent_dir / "workspace" / "baseline.bin"
    started = time.perf_counter()
    # the same bytes through a pipe into a file, by cat: what the tool does, minus the tool
    subprocess.run(["sh", "-c", f"head -c {size} /dev/zero | cat > '{target}'"], check=True)
    baseline = time.perf_counter() - started
    target.unlink()
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(agent_dir), str(size)], capture_output=True, text=True, check=True
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["length"] == size, figures
    mib = size / 2**20
    print(f"(b) {mib:.0f} MiB to stdout")
    print(f"    head | cat > file     {baseline:6.2f} s  {mib / baseline:8.0f} MiB/s")
    print(
        f"    tool (spilled)        {figures['s']:6.2f} s  {mib / figures['s']:8.0f} MiB/s"
        f"   = {figures['s'] / baseline:.2f}x the bare time"
    )
    print(f"    peak RSS growth       {figures['growth_kib'] / 1024:6.1f} MiB (target < 32 MiB)")
    tools.write_text(TOOLS)


def deadline(agent_dir: Path) -> None:
    agent = cireil.load(agent_dir)
    started = time.perf_counter()
    quick = agent.call("exec", command="sh", args=["-c", "sleep 30 & echo started"]).data
    background = time.perf_counter() - started
    started = time.perf_counter()
    slow = agent.call("exec", command="sh", args=["-c", "sleep 30 & sleep 30"]).data
    timed = time.perf_counter() - started
    print("(c) sleep 30 in the background, timeout 2 s")
    print(f"    parent exits at once      {background:5.2f} s  (stdout {quick.get('stdout')!r})")
    print(f"    parent sleeps too         {timed:5.2f} s  (timedOut={slow.get('timedOut')}; target < 3 s)")
    agent.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--gib", type=float, default=1.0)
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        agent_dir = make_agent(Path(tmp))
        overhead(agent_dir, options.runs)
        throughput(agent_dir, int(options.gib * 2**30))
        deadline(agent_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
