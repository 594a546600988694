"""The original CireilClaw itself (TypeScript, Node) as a test peer: installed once, driven without Discord.

    def test_something(original, tmp_path):          # fixture `original` (tests/peer/conftest.py): an Original
        home = tmp_path / "home"
        agent_dir = original.init_root(home, name="Peer", preset="standard")   # its own `init`, answered
        original.mark_migrations_applied(home)       # else its `run` stops at the migration prompt
        with ScriptedLLM() as llm:
            point_engine(agent_dir, llm.base_url)    # kind="openai" | "anthropic"; context_window=N
            with original.start(home) as peer:       # its own `run`, only the Discord channel stood in for
                peer.turn("internal:notes", "hello") # {"ok": True, "history": 3, "session": ..., "sent": [...]}
                peer.flush()                         # its debounced saves, now
            # leaving the block: SIGINT, its shutdown hooks flush pending saves, the process is waited for

API
- `install(cache=None, tarball=None) -> Original`; raises `OriginalUnavailable(reason)` (one line, naming the
  install log) when Node/npm/pnpm or the build is not to be had. The fixture turns that into pytest.skip.
  Cache: `$CIREIL_ORIGINAL_CACHE`, default `~/.cache/cireil/original-c2af172`: `node/` (node@22, pnpm from the
  npm registry), `src/cireilclaw/` (the unpacked tarball, `pnpm install --frozen-lockfile`), `install.log`,
  `complete` (written last; a cache without it, or made from another tarball or recipe, is installed again).
  A lock file beside it (fcntl) keeps two pytest processes from installing at once.
  Tarball: `$CIREIL_ORIGINAL_TARBALL`, else `<repo>/../shared/upstream/cireilclaw-c2af172.tar.gz`.
- `Original`: `.checkout` (the unpacked source), `.runtime` (its packages/runtime), `.node` (the node binary),
  `.install_seconds` (None when the cache was reused).
  - `init_root(home, name="Peer Agent", *, preset="standard"|"full"|"minimal", description="", kind="openai",
    model="scripted-1", api_key="", api_base=None, binaries=(), discord=None | {"token":..,"ownerId":..},
    answers=None, timeout=60) -> Path`: the agent directory `realpath(home)/.cireilclaw/agents/<slug>`, written
    by the original's own init command (its questions answered by the driver; with api_base None its model
    probe is answered by the driver itself, so engine.toml's apiBase points nowhere until `point_engine`).
    Exactly what init writes: no migrations.json, no sessions.db.
  - `migration_ids() -> list[str]`: the original's config migrations (the folders its runner loads).
  - `mark_migrations_applied(home) -> Path`: config/migrations.json listing all of them, as its runner writes
    it. Without it, `start` fails: the original prompts "How would you like to proceed?" (answer it with
    `answers={"How would you like to proceed?": "run-all"}` to see what its migrations do).
  - `start(home, slug=None, *, answers=None, log_level="debug", env=None, timeout=60) -> OriginalProcess`:
    the original's `run` (migrations, plugins, every agent's sessions.db and sessions, config watcher,
    schedulers with cron.toml jobs and heartbeat) with its Discord channel replaced by one that records what
    is sent; returns once it printed ready. `slug` is the agent ops address by default (else the only one).
- `OriginalProcess` (a context manager; leaving it stops the original): every op waits at most `timeout`
  seconds (default 60) and raises `OriginalError` with the original's stderr tail if it failed, timed out
  or the process died; `check=False` returns a failed op's reply ({"ok": False, "error": ...}) instead.
  - `turn(session, text, *, author=None, mention=False, model=None, provider=None, agent=None)`: a user turn
    saved through the original's own path: `discord:<channel>[|<guild>]` as its Discord channel handles a
    message (lastActivity set, message id, history rolled back on failure, saveSession), anything else as a
    cron job with execution = "main" runs (`internal:<name>`, `tui`). Reply: history (length), session,
    messageId (Discord), sent (what the agent sent through the stand-in channel during the op).
  - `cron(job)` (runCronJob on that job of config/cron.toml, now; reply "ran"), `heartbeat()` (runHeartbeat
    with config/heartbeat.toml), `flush()` (flushAllSessions: pending debounced saves run now),
    `sessions()` (list of {id, key, channel, history, historyCursor, lastActivity, busy}),
    `history(session)` (its in-memory history, image bytes as {"bytes": n}), `request(dict)` (any op).
  - `stop(timeout=30) -> int`: SIGINT as Ctrl-C on `run` (its hooks flush pending saves); the exit code.
    Leaving the `with` block stops it so and raises OriginalError unless it exited 0; leaving it on an
    exception kills it instead (nothing flushed: the test's own error is what matters).
  - `.stderr` (text so far), `.ready` (its ready line: agents, prompts asked), `.startup_seconds`, `.pid`,
    `.running`, `.noise` (stdout lines that were not protocol; there should be none).
- `point_engine(agent_dir, base_url, kind="openai", *, model=None, context_window=None) -> Path`: rewrites
  config/engine.toml (atomically) with one default provider at `base_url` (a ScriptedLLM's `base_url`
  serves "openai" and "anthropic"), keeping the provider name, model and key init wrote unless given;
  `context_window` adds `[<provider>.models.<model>] contextWindow` (the original then knows its budget).

The original's behaviour a test meets here (its own, not the harness's):
- saves are debounced 2 s (`saveSession`): a row appears 2 s after a turn, at `flush()`, or at `stop()`;
- a cron job with execution = "main" and a heartbeat never set lastActivity; a Discord message does;
- internal and tui sessions have no channel handler in `run`: `respond` there fails ("This channel does not
  support sending messages") and the turn goes on until `no-response`; script that, or the turn loops;
- the real `run` refuses to start without config/channels/discord.toml for every agent; the stand-in does
  not need it (its ownerId is used when present) and cannot resolve the "owner" DM.

Driver: tests/peer/driver/ (our own code, run with the checkout's tsx; see driver.mts for the protocol).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import tarfile
import threading
import time
import tomllib
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cireil.runtime.files.untar import extract_all

REPO = Path(__file__).resolve().parents[1]
DRIVER = REPO / "tests" / "peer" / "driver" / "driver.mts"

COMMIT = "c2af172"
TARBALL_NAME = f"cireilclaw-{COMMIT}.tar.gz"
NODE_PACKAGE = "node@22.23.3"
PNPM_PACKAGE = "pnpm@12.25.1"
# bump when the install steps change, so caches made the old way are installed again
RECIPE = 1

NPM_TIMEOUT = 600
PNPM_TIMEOUT = 900
STDERR_KEEP = 400_000  # characters of the original's stderr kept for failure messages

__all__ = [
    "Original",
    "OriginalError",
    "OriginalProcess",
    "OriginalUnavailable",
    "install",
    "point_engine",
]


class OriginalUnavailable(Exception):
    """The original cannot be installed or run on this machine (the tests using it skip, with this line)."""


class OriginalError(AssertionError):
    """The original failed, timed out or died while a test drove it; the message ends with its stderr."""


# -- where things are -----------------------------------------------------------------------------------
def default_cache() -> Path:
    configured = os.environ.get("CIREIL_ORIGINAL_CACHE")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "cireil" / f"original-{COMMIT}"


def find_tarball() -> Path:
    configured = os.environ.get("CIREIL_ORIGINAL_TARBALL")
    if configured:  # said explicitly: that file or none
        candidates = [Path(configured)]
    else:
        candidates = [REPO.parent / "shared" / "upstream" / TARBALL_NAME, Path("/work/shared/upstream") / TARBALL_NAME]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise OriginalUnavailable(
        f"the original's source {TARBALL_NAME} is not at {' or '.join(map(str, candidates))}"
        " (set CIREIL_ORIGINAL_TARBALL)"
    )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


# -- install ----------------------------------------------------------------------------------------------
def install(cache: Path | None = None, tarball: Path | None = None) -> Original:
    """The installed original, from the cache when a complete install of this tarball is there."""
    cache = (cache or default_cache()).resolve()
    tarball = tarball or find_tarball()
    stamp = {"tarball_sha256": _sha256(tarball), "node": NODE_PACKAGE, "pnpm": PNPM_PACKAGE, "recipe": RECIPE}
    cache.parent.mkdir(parents=True, exist_ok=True)
    with (cache.parent / f"{cache.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another pytest process installing: wait for it, then reuse its work
        try:
            done = cache / "complete"
            if done.is_file() and _read_json(done) == stamp:
                return Original(cache, install_seconds=None)
            started = time.monotonic()
            try:
                _install(cache, tarball)
            except (OSError, tarfile.TarError) as exc:  # a disk or archive problem: skip as well, with the reason
                log = cache / "install.log"
                raise OriginalUnavailable(f"installing into {cache} failed: {exc} (log: {log})") from exc
            done.write_text(json.dumps(stamp, indent=2) + "\n")
            return Original(cache, install_seconds=time.monotonic() - started)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _install(cache: Path, tarball: Path) -> None:
    """Node + pnpm from the npm registry, the tarball unpacked, its dependencies installed; a half install
    (no `complete` stamp) is removed first."""
    cache.mkdir(parents=True, exist_ok=True)
    (cache / "complete").unlink(missing_ok=True)
    for part in ("node", "src"):
        shutil.rmtree(cache / part, ignore_errors=True)
    log = cache / "install.log"
    with log.open("a") as out:
        out.write(f"\n=== install {time.strftime('%Y-%m-%d %H:%M:%S')} from {tarball}\n")
    npm = shutil.which("npm")
    if npm is None:
        raise OriginalUnavailable(f"npm is not on PATH, so Node 22 and pnpm cannot be installed (log: {log})")

    node_dir = cache / "node"
    node_dir.mkdir()
    _step(
        log,
        "npm install node@22 and pnpm",
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(node_dir), NODE_PACKAGE, PNPM_PACKAGE],
        cwd=node_dir,
        env=os.environ.copy(),
        timeout=NPM_TIMEOUT,
    )
    bin_dir = node_dir / "node_modules" / ".bin"
    headers = sorted((node_dir / "node_modules" / "node" / "node_modules").glob("node-linux-*"))
    if not (bin_dir / "node").exists() or not (bin_dir / "pnpm").exists() or not headers:
        raise OriginalUnavailable(f"npm installed no node/pnpm binary or node headers under {node_dir} (log: {log})")

    src = cache / "src"
    src.mkdir()
    with tarfile.open(tarball) as archive:
        extract_all(archive, src)  # Debian 12's own python3 (3.11.2) has no extraction filters
    checkout = src / "cireilclaw"
    if not (checkout / "pnpm-lock.yaml").is_file():
        raise OriginalUnavailable(f"{tarball} has no cireilclaw/pnpm-lock.yaml (log: {log})")

    env = os.environ.copy()
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    # better-sqlite3 builds against the headers the node package ships: node-gyp would download them otherwise
    env["npm_config_nodedir"] = str(headers[0])
    _step(
        log,
        "pnpm install --frozen-lockfile",
        [str(bin_dir / "pnpm"), "install", "--frozen-lockfile"],
        cwd=checkout,
        env=env,
        timeout=PNPM_TIMEOUT,
    )
    original = Original(cache, install_seconds=None)
    for needed in (original.tsx_loader, original.runtime / "node_modules" / "better-sqlite3"):
        if not needed.exists():
            raise OriginalUnavailable(f"pnpm install left no {needed} (log: {log})")
    _step(
        log,
        "better-sqlite3 loads",
        [str(original.node), "-e", "require('better-sqlite3')(':memory:').close()"],
        cwd=original.runtime,
        env=env,
        timeout=60,
    )


def _step(log: Path, what: str, argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float) -> None:
    with log.open("a") as out:
        out.write(f"--- {what}: {' '.join(argv)} (in {cwd})\n")
        out.flush()
        started = time.monotonic()
        try:
            done = subprocess.run(
                argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=out, stderr=out, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            raise OriginalUnavailable(f"{what} took over {timeout:.0f} s (log: {log})") from None
        except OSError as exc:
            raise OriginalUnavailable(f"{what} could not start: {exc} (log: {log})") from None
        out.write(f"--- {what}: exit {done.returncode} after {time.monotonic() - started:.1f} s\n")
    if done.returncode != 0:
        raise OriginalUnavailable(f"{what} failed with exit {done.returncode} (log: {log})")


# -- the installed original -----------------------------------------------------------------------------
class Original:
    """An installed original CireilClaw (see the module docstring)."""

    def __init__(self, cache: Path, *, install_seconds: float | None) -> None:
        self.cache = cache
        self.install_seconds = install_seconds
        self.checkout = cache / "src" / "cireilclaw"
        self.runtime = self.checkout / "packages" / "runtime"
        self.node = cache / "node" / "node_modules" / ".bin" / "node"
        self.tsx_loader = self.runtime / "node_modules" / "tsx" / "dist" / "loader.mjs"

    def __repr__(self) -> str:
        return f"Original({self.checkout})"

    def _command(self, mode: str) -> list[str]:
        return [str(self.node), "--import", self.tsx_loader.as_uri(), str(DRIVER), mode]

    def _env(self, home: Path, config: Mapping[str, Any], extra: Mapping[str, str] | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CIREIL_DRIVER", "NODE_OPTIONS"))}
        env.update(
            HOME=str(home),
            PATH=f"{self.node.parent}{os.pathsep}{env.get('PATH', '')}",
            NO_COLOR="1",  # its log lines without colour codes, for failure messages
            CIREIL_DRIVER_CONFIG=json.dumps(config),
        )
        env.update(extra or {})
        return env

    def _config(self, **more: Any) -> dict[str, Any]:
        return {"src": str(self.runtime / "src"), **{k: v for k, v in more.items() if v is not None}}

    def migration_ids(self) -> list[str]:
        """The config migrations the original's runner loads: folders of src/config/migrations with a migration.ts."""
        folder = self.runtime / "src" / "config" / "migrations"
        return sorted(p.name for p in folder.iterdir() if (p / "migration.ts").is_file())

    def mark_migrations_applied(self, home: Path) -> Path:
        """config/migrations.json with every migration applied, as the runner writes it (2-space JSON)."""
        config = Path(os.path.realpath(home)) / ".cireilclaw" / "config"
        config.mkdir(parents=True, exist_ok=True)
        target = config / "migrations.json"
        target.write_text(json.dumps({"applied": self.migration_ids()}, indent=2))
        return target

    def init_root(
        self,
        home: Path,
        name: str = "Peer Agent",
        *,
        preset: str = "standard",
        description: str = "",
        kind: str = "openai",
        model: str = "scripted-1",
        api_key: str = "",
        api_base: str | None = None,
        binaries: Iterable[str] = (),
        discord: Mapping[str, str] | None = None,
        answers: Mapping[str, Any] | None = None,
        timeout: float = 60,
    ) -> Path:
        """Run the original's `init` in `home` (see the module docstring); the agent directory it wrote."""
        home = Path(home)
        home.mkdir(parents=True, exist_ok=True)
        spec = {
            "name": name,
            "description": description,
            "preset": preset,
            "kind": kind,
            "model": model,
            "apiKey": api_key,
            "apiBase": api_base,
            "binaries": list(binaries),
            "discord": dict(discord) if discord is not None else None,
        }
        config = self._config(init={k: v for k, v in spec.items() if v is not None}, answers=dict(answers or {}))
        try:
            done = subprocess.run(
                self._command("init"),
                cwd=self.runtime,
                env=self._env(home, config, None),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            raise OriginalError(f"the original's init took over {timeout} s; stderr:\n{_text(exc.stderr)}") from None
        replies = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not replies or not replies[-1].get("ok"):
            error = replies[-1].get("error") if replies else done.stdout.strip()
            raise OriginalError(
                f"the original's init failed (exit {done.returncode}): {error}\nstderr:\n{_tail(done.stderr)}"
            )
        return Path(replies[-1]["agent"])

    def start(
        self,
        home: Path,
        slug: str | None = None,
        *,
        answers: Mapping[str, Any] | None = None,
        log_level: str = "debug",
        env: Mapping[str, str] | None = None,
        timeout: float = 60,
    ) -> OriginalProcess:
        """The original's `run` on the root in `home`, ready for ops (see the module docstring)."""
        config = self._config(slug=slug, answers=dict(answers or {}), logLevel=log_level)
        process = OriginalProcess(self._command("serve"), cwd=self.runtime, env=self._env(Path(home), config, env))
        try:
            process.wait_ready(timeout)
        except BaseException:
            process.kill()
            raise
        return process


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _tail(text: str, limit: int = 6000) -> str:
    return text if len(text) <= limit else "...\n" + text[-limit:]


# -- a running original -----------------------------------------------------------------------------------
class OriginalProcess:
    """The driver running the original's `run`; JSON lines in and out (see the module docstring)."""

    def __init__(self, argv: list[str], *, cwd: Path, env: Mapping[str, str]) -> None:
        self.started = time.monotonic()
        self.startup_seconds: float | None = None
        self.ready: dict[str, Any] = {}
        self._proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C in the terminal running pytest reaches pytest, not the original
        )
        self._lines: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._stderr: deque[str] = deque()
        self._stderr_size = 0
        self._stderr_lock = threading.Lock()
        self._ids = itertools.count(1)
        self.noise: list[str] = []  # stdout lines that were not protocol (there should be none)
        threading.Thread(target=self._read_stdout, daemon=True, name="original-stdout").start()
        self._stderr_done = threading.Thread(target=self._read_stderr, daemon=True, name="original-stderr")
        self._stderr_done.start()

    # -- plumbing ---------------------------------------------------------------------------------------
    def _read_stdout(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                self.noise.append(line.rstrip("\n"))
                continue
            if isinstance(message, dict):
                self._lines.put(message)
            else:
                self.noise.append(line.rstrip("\n"))
        self._lines.put(None)  # end of output: the process is gone

    def _read_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            with self._stderr_lock:
                self._stderr.append(line)
                self._stderr_size += len(line)
                while self._stderr_size > STDERR_KEEP and len(self._stderr) > 1:
                    self._stderr_size -= len(self._stderr.popleft())

    @property
    def stderr(self) -> str:
        with self._stderr_lock:
            return "".join(self._stderr)

    @property
    def pid(self) -> int:
        return self._proc.pid

    @property
    def running(self) -> bool:
        return self._proc.poll() is None

    def _fail(self, what: str) -> OriginalError:
        if not self.running:
            self._stderr_done.join(timeout=5)
            what += f" (the original exited with {self._proc.returncode})"
        return OriginalError(f"{what}\n--- the original's stderr:\n{_tail(self.stderr)}")

    def _next(self, deadline: float, what: str) -> dict[str, Any]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise self._fail(f"{what}: no answer in time")
        try:
            message = self._lines.get(timeout=remaining)
        except queue.Empty:
            raise self._fail(f"{what}: no answer in time") from None
        if message is None:
            self._lines.put(None)  # keep the end visible to the next reader
            self._proc.wait(timeout=10)
            raise self._fail(f"{what}: the original's output ended")
        return message

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        message = self._next(time.monotonic() + timeout, f"starting the original (waited {timeout} s)")
        if not message.get("ready"):
            raise self._fail(f"the original did not start: {message.get('error')}")
        self.ready = message
        self.startup_seconds = time.monotonic() - self.started
        return message

    # -- ops ------------------------------------------------------------------------------------------
    def request(self, op: Mapping[str, Any], *, timeout: float = 60, check: bool = True) -> dict[str, Any]:
        """Send one op, wait for its answer; OriginalError if it failed (check=True), timed out or died."""
        if not self.running:
            raise self._fail(f"op {op.get('op')!r}: the original is not running")
        ident = next(self._ids)
        message = {**{k: v for k, v in op.items() if v is not None}, "id": ident}
        assert self._proc.stdin is not None
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._fail(f"op {op.get('op')!r}: could not write to the original") from None
        deadline = time.monotonic() + timeout
        what = f"op {json.dumps(message)[:300]}"
        while True:
            answer = self._next(deadline, what)
            if answer.get("id") == ident:
                break
        if check and not answer.get("ok"):
            raise self._fail(f"{what} failed in the original: {answer.get('error')}")
        return answer

    def turn(
        self,
        session: str,
        text: str,
        *,
        author: Mapping[str, str] | None = None,
        mention: bool = False,
        model: str | None = None,
        provider: str | None = None,
        agent: str | None = None,
        timeout: float = 60,
        check: bool = True,
    ) -> dict[str, Any]:
        op = {
            "op": "turn",
            "session": session,
            "text": text,
            "author": dict(author) if author else None,
            "mention": mention or None,
            "model": model,
            "provider": provider,
            "agent": agent,
        }
        return self.request(op, timeout=timeout, check=check)

    def cron(self, job: str, *, agent: str | None = None, timeout: float = 60, check: bool = True) -> dict[str, Any]:
        return self.request({"op": "cron", "job": job, "agent": agent}, timeout=timeout, check=check)

    def heartbeat(self, *, agent: str | None = None, timeout: float = 60, check: bool = True) -> dict[str, Any]:
        return self.request({"op": "heartbeat", "agent": agent}, timeout=timeout, check=check)

    def flush(self, *, timeout: float = 30) -> dict[str, Any]:
        return self.request({"op": "flush"}, timeout=timeout)

    def sessions(self, *, agent: str | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        return self.request({"op": "sessions", "agent": agent}, timeout=timeout)["sessions"]

    def history(self, session: str, *, agent: str | None = None, timeout: float = 30) -> list[dict[str, Any]]:
        return self.request({"op": "history", "session": session, "agent": agent}, timeout=timeout)["history"]

    # -- stopping -------------------------------------------------------------------------------------
    def stop(self, timeout: float = 30) -> int:
        """SIGINT, as Ctrl-C on the original's `run`; its shutdown hooks flush pending saves. The exit code."""
        if self.running:
            self._proc.send_signal(signal.SIGINT)
        try:
            code = self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise self._fail(f"the original did not stop within {timeout} s of SIGINT") from None
        self._stderr_done.join(timeout=5)
        self._close_pipes()
        return code

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=10)
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self._proc.stdin is not None:
            with contextlib.suppress(OSError):
                self._proc.stdin.close()

    def __enter__(self) -> OriginalProcess:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.kill()  # the test failed already: its error matters, not a clean shutdown
            return
        code = self.stop()
        if code != 0:  # its shutdown ends with exit(0): anything else is a crash on the way out
            raise self._fail("its shutdown after SIGINT did not end with exit 0")


# -- engine.toml ----------------------------------------------------------------------------------------
def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string for the text used here


def point_engine(
    agent_dir: Path,
    base_url: str,
    kind: str = "openai",
    *,
    model: str | None = None,
    context_window: int | None = None,
) -> Path:
    """Rewrite config/engine.toml (atomically: a temporary file renamed over it) with one provider, the
    global default, at `base_url`; the provider name, model and key are kept from the file when it has them."""
    path = Path(agent_dir) / "config" / "engine.toml"
    name, current = "default", {}
    if path.is_file():
        tables = tomllib.loads(path.read_text())
        chosen = next((k for k, v in tables.items() if isinstance(v, dict) and v.get("isGlobalDefault")), None)
        if chosen is not None:
            name, current = chosen, tables[chosen]
    model = model or current.get("defaultModel") or "scripted-1"
    key = current.get("apiKey", "not-needed")
    keys = "[" + ", ".join(map(_toml_string, key)) + "]" if isinstance(key, list) else _toml_string(key)
    lines = [
        f"[{_toml_string(name)}]",
        f"apiBase = {_toml_string(base_url)}",
        f"apiKey = {keys}",
        f"defaultModel = {_toml_string(model)}",
        "isGlobalDefault = true",
        f"kind = {_toml_string(kind)}",
    ]
    if context_window is not None:
        lines += ["", f"[{_toml_string(name)}.models.{_toml_string(model)}]", f"contextWindow = {int(context_window)}"]
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)  # what is written must parse
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.chmod(temporary, 0o600)  # as init writes it
    os.replace(temporary, path)
    return path
