"""`cireil attach` / `detach` / `attach --status`: engine.toml pointed at the proxy and back, byte for byte.

Attaching keeps the file's exact bytes in `<agent>/cireil-attach.json` (mode 0600, like engine.toml: it
holds the same keys) with the sha256 of the file it wrote; detaching writes those bytes back, atomically,
only while engine.toml is still the file attach wrote (someone who edited it while attached is told, and
`--force` restores anyway, keeping their edit beside it). Each provider's `apiBase` becomes
`http://127.0.0.1:<port>/p/<provider>`; the proxy forwards `/p/<provider>/<rest>` to the apiBase that
provider had before, so the path the original appends for its kind (/chat/completions, /models, /messages,
/codex/responses, /files) reaches the provider unchanged. Nothing else in the file changes: attach checks
that, and refuses (with the reason) a file it cannot rewrite that way or restore.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from ..files.atomic import atomic_write
from .wire import KINDS

STATE_FILE = "cireil-attach.json"
PROXY_FILE = "cireil-proxy.json"  # written by a running proxy: its pid and port
PROXY_LOG = "cireil-proxy.log"
ENGINE = Path("config") / "engine.toml"
PREFIX = "/p/"
START_TIMEOUT = 20.0


class AttachError(Exception):
    """Attach or detach refused; the message says why and what to do."""


@dataclass(frozen=True)
class Upstream:
    provider: str
    kind: str
    api_base: str


def engine_path(agent_dir: Path) -> Path:
    return agent_dir / ENGINE


def proxy_base(port: int, provider: str) -> str:
    return f"http://127.0.0.1:{port}{PREFIX}{quote(provider, safe='')}"


def provider_of_path(path: str) -> tuple[str, str] | None:
    """(provider, the rest of the path with its query) of a proxy path `/p/<provider>/<rest>`."""
    if not path.startswith(PREFIX):
        return None
    name, _, rest = path[len(PREFIX) :].partition("/")
    return unquote(name), "/" + rest


def read_upstreams(agent_dir: Path, data: bytes) -> dict[str, Upstream]:
    """The providers of engine.toml bytes, checked to be forwardable; AttachError naming the file if not."""
    path = engine_path(agent_dir)
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise AttachError(
            f"{path}: not a TOML file cireil can read ({exc}); fix it first (cireil dry-run says how)"
        ) from None
    out: dict[str, Upstream] = {}
    for name, table in doc.items():
        if not isinstance(table, dict):
            raise AttachError(
                f"{path}: top-level key {name!r} is not a provider table; the original would refuse this file too"
            )
        kind = table.get("kind", "openai")
        if kind not in KINDS:
            raise AttachError(
                f"{path}: provider {name!r} has kind {kind!r}, which the proxy cannot forward "
                f"(it forwards {', '.join(KINDS)})"
            )
        base = table.get("apiBase")
        if not isinstance(base, str) or urlsplit(base).scheme not in ("http", "https") or not urlsplit(base).hostname:
            raise AttachError(
                f"{path}: provider {name!r} has apiBase {base!r}, not an http(s) URL the proxy can forward to"
            )
        if urlsplit(base).query or urlsplit(base).fragment:
            raise AttachError(
                f"{path}: provider {name!r}: apiBase {base!r} has a query or fragment; the proxy cannot keep it"
            )
        if _is_proxy(base):
            raise AttachError(
                f"{path}: provider {name!r} already points at a cireil proxy ({base}) but {agent_dir / STATE_FILE} "
                "is missing, so the provider it replaced is unknown: put the real apiBase back by hand"
            )
        out[name] = Upstream(name, kind, base)
    if not out:
        raise AttachError(f"{path}: no provider table; nothing to attach to")
    return out


def _is_proxy(base: str) -> bool:
    parts = urlsplit(base)
    return parts.hostname in ("127.0.0.1", "localhost") and parts.path.startswith(PREFIX)


def rewrite(agent_dir: Path, data: bytes, port: int) -> bytes:
    """engine.toml with every provider's apiBase at the proxy, nothing else changed (checked)."""
    import tomlkit

    path = engine_path(agent_dir)
    text = data.decode("utf-8")
    doc = tomlkit.parse(text)
    if tomlkit.dumps(doc) != text:
        raise AttachError(f"{path}: cireil cannot rewrite this file without changing more than apiBase")
    for name, table in doc.items():
        table["apiBase"] = proxy_base(port, name)
    out = tomlkit.dumps(doc).encode("utf-8")
    before, after = tomllib.loads(text), tomllib.loads(out.decode("utf-8"))
    for name in before:
        before[name].pop("apiBase", None)
        if after[name].pop("apiBase", None) != proxy_base(port, name):
            raise AttachError(f"{path}: rewriting apiBase of {name!r} failed; the file was left as it was")
    if before != after:
        raise AttachError(f"{path}: rewriting apiBase would change other values; the file was left as it was")
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_state(agent_dir: Path) -> dict | None:
    path = agent_dir / STATE_FILE
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise AttachError(f"{path}: unreadable ({exc}); it holds engine.toml as it was before attaching") from None
    if not isinstance(state, dict) or "engine" not in state:
        raise AttachError(f"{path}: not cireil's attach record; move it away only if engine.toml is as it should be")
    return state


def saved_engine(state: dict) -> bytes:
    return base64.b64decode(state["engine"])


def upstreams_for(agent_dir: Path) -> dict[str, Upstream]:
    """Where the proxy forwards: the providers engine.toml named before attaching, or, not attached, now."""
    state = load_state(agent_dir)
    data = saved_engine(state) if state is not None else engine_path(agent_dir).read_bytes()
    return read_upstreams(agent_dir, data)


# -- the proxy process ---------------------------------------------------------------------------------------
def proxy_running(agent_dir: Path) -> dict | None:
    """The running proxy's record ({pid, port, started}) if its process is alive."""
    try:
        info = json.loads((agent_dir / PROXY_FILE).read_text(encoding="utf-8"))
        pid = int(info["pid"])
        os.kill(pid, 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info


def start_proxy(agent_dir: Path, port: int = 0) -> dict:
    """A proxy of its own process (`cireil proxy`), outliving this one; its record once it listens."""
    log = open(agent_dir / PROXY_LOG, "ab")  # noqa: SIM115 (handed to the child)
    with log:
        os.chmod(agent_dir / PROXY_LOG, 0o600)
        child = subprocess.Popen(
            [sys.executable, "-m", "cireil", "proxy", str(agent_dir), "--port", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,  # a notebook or a shell closing never stops it
            close_fds=True,
        )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        info = proxy_running(agent_dir)
        if info is not None and info.get("pid") == child.pid:
            return info
        if child.poll() is not None:
            break
        time.sleep(0.02)
    if child.poll() is None:
        child.kill()
    tail = _tail(agent_dir / PROXY_LOG)
    raise AttachError(f"the proxy did not start (log {agent_dir / PROXY_LOG}): {tail}")


def _tail(path: Path, lines: int = 3) -> str:
    try:
        return " | ".join(path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_proxy(agent_dir: Path, timeout: float = 15.0) -> bool:
    """SIGTERM to the running proxy (it finishes the requests in flight), then wait for it; True if one ran."""
    info = proxy_running(agent_dir)
    if info is None:
        return False
    pid = int(info["pid"])
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proxy_running(agent_dir) is None:
            return True
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    (agent_dir / PROXY_FILE).unlink(missing_ok=True)
    return True


# -- attach, detach, status -------------------------------------------------------------------------------------
def attach(agent_dir: Path, port: int = 0) -> list[str]:
    """Point the agent's engine.toml at the proxy (started if not running); the lines saying what changed."""
    agent_dir = Path(agent_dir).resolve()
    path = engine_path(agent_dir)
    if path.is_symlink():
        raise AttachError(f"{path} is a symlink; attach replaces the file and could not restore the link")
    state = load_state(agent_dir)
    if state is not None:
        info = proxy_running(agent_dir)
        lines = [f"{agent_dir} is attached already, since {state['since']}"]
        if info is None:
            info = start_proxy(agent_dir, int(state["port"]))
            lines.append(f"the proxy was not running: started again (pid {info['pid']}, port {info['port']})")
        return lines
    try:
        data = path.read_bytes()
        mode = path.stat().st_mode & 0o777
    except OSError as exc:
        raise AttachError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    upstreams = read_upstreams(agent_dir, data)
    info = proxy_running(agent_dir)
    started = info is None
    if info is None:
        info = start_proxy(agent_dir, port)
    try:
        written = rewrite(agent_dir, data, int(info["port"]))
        state = {
            "format": 1,
            "since": datetime.now(UTC).isoformat(timespec="seconds"),
            "port": int(info["port"]),
            "mode": mode,
            "engine": base64.b64encode(data).decode("ascii"),
            "engine_sha256": _sha(data),
            "written_sha256": _sha(written),
            "providers": {n: {"kind": u.kind, "apiBase": u.api_base} for n, u in upstreams.items()},
        }
        # the record first: a crash between the two writes leaves a restorable state, never the reverse
        atomic_write(agent_dir / STATE_FILE, (json.dumps(state, indent=2) + "\n").encode(), mode=0o600, keep_mode=False)
        atomic_write(path, written, mode=mode, keep_mode=False)
    except BaseException:
        (agent_dir / STATE_FILE).unlink(missing_ok=True)
        if started:
            stop_proxy(agent_dir)
        raise
    lines = [f"attached {agent_dir}: {path} now sends every provider through the proxy"]
    for name, up in upstreams.items():
        lines.append(f"  [{name}] apiBase {up.api_base!r} -> {proxy_base(int(info['port']), name)!r} ({up.kind})")
    lines.append(
        f"proxy: pid {info['pid']}, http://127.0.0.1:{info['port']} ({'started' if started else 'already running'});"
        f" log {agent_dir / PROXY_LOG}"
    )
    lines.append(f"the file as it was is kept in {agent_dir / STATE_FILE}; `cireil detach {agent_dir}` restores it")
    return lines


def detach(agent_dir: Path, force: bool = False) -> list[str]:
    agent_dir = Path(agent_dir).resolve()
    path = engine_path(agent_dir)
    state = load_state(agent_dir)
    if state is None:
        stopped = stop_proxy(agent_dir)
        return [f"{agent_dir} is not attached" + ("; its proxy was running and is stopped" if stopped else "")]
    original = saved_engine(state)
    if _sha(original) != state.get("engine_sha256"):
        raise AttachError(f"{agent_dir / STATE_FILE}: the saved engine.toml does not match its checksum; not restored")
    lines = []
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        current = None
    if current is not None and _sha(current) != state.get("written_sha256"):
        if not force:
            raise AttachError(
                f"{path} changed since attaching; restoring would undo that edit. Put its apiBase values back by "
                f"hand, or `cireil detach --force {agent_dir}` (the edited file is kept as engine.toml.attached)"
            )
        path.with_name("engine.toml.attached").write_bytes(current)
        os.chmod(path.with_name("engine.toml.attached"), 0o600)
        lines.append(f"{path} was edited while attached: that version is kept as {path.name}.attached")
    atomic_write(path, original, mode=int(state.get("mode", 0o600)), keep_mode=False)
    (agent_dir / STATE_FILE).unlink(missing_ok=True)
    stopped = stop_proxy(agent_dir)
    lines.insert(
        0, f"detached {agent_dir}: {path} restored byte for byte ({len(original)} bytes, as before {state['since']})"
    )
    lines.append("proxy stopped" if stopped else "the proxy was not running")
    return lines


def status(agent_dir: Path) -> dict[str, Any]:
    agent_dir = Path(agent_dir).resolve()
    state = load_state(agent_dir)
    info = proxy_running(agent_dir)
    out: dict[str, Any] = {"agent": str(agent_dir), "attached": state is not None, "proxy": info}
    if state is not None:
        out["since"] = state["since"]
        out["providers"] = state.get("providers", {})
        try:
            out["engine_unchanged"] = _sha(engine_path(agent_dir).read_bytes()) == state.get("written_sha256")
        except OSError:
            out["engine_unchanged"] = False
    return out


def status_lines(agent_dir: Path) -> list[str]:
    s = status(agent_dir)
    proxy = s["proxy"]
    running = f"proxy pid {proxy['pid']} on port {proxy['port']}" if proxy else "no proxy running"
    if not s["attached"]:
        return [f"{s['agent']}: not attached ({running})"]
    lines = [f"{s['agent']}: attached since {s['since']}; {running}"]
    if proxy is None:
        lines.append("  the original's model calls fail while no proxy runs: `cireil attach` starts it again")
    if not s["engine_unchanged"]:
        lines.append("  engine.toml was edited since attaching: detach will ask before restoring it")
    for name, p in s.get("providers", {}).items():
        lines.append(f"  [{name}] {p['kind']} -> {p['apiBase']}")
    return lines
