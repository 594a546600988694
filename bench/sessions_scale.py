"""Sessions at scale (issue 35): what a load, a tool call, a turn's commit, a search and a page of a session
cost on a big sessions.db, against a small one and against the original CireilClaw's own functions.

    .venv/bin/python bench/sessions_scale.py [--big] [--reps 5] [--seed 1] [--cache DIR] [--no-original] [--keep]

Databases: generated in the original's exact format (its schema and drizzle bookkeeping, as
tests/upstream_db.py makes them; rows as its save writes them: compact JSON, its message and block shapes,
upstream-formats §4.5), at ~3 MB (a 500-message session among a few others) and ~283 MB (a 5,000-message
session among a few hundred others), and with --big at ~1.1 GB (a 10,000-message session). The big session is
`internal:notebook:big` (cireil's `notebook:big`), the others Discord guild channels, threads and DMs (snowflake
ids, last_activity, pictures), cron `main` internal sessions and the TUI session. Generated once per size and
seed into the cache (default ~/.cache/cireil/bench-sessions), then copied for each run.

Measured per size, the median of --reps rounds, interleaved across sizes (round 1 of every size, then round 2),
each operation after a full garbage collection outside the clock (in both runtimes), so that none pays for the
garbage of the one before:
  load              cireil.load of the agent, warm (its side index exists), with sessions.db as cireil last
                    left it; and again after another connection saved a row (the load then looks at every
                    row's header)
  tool call         agent.call("session-info") in the big session, and its sessions.db writes
  list / query      list-sessions and query-sessions (raw), each the first call after another connection
                    rewrote one Discord row the way the original's save does (INSERT .. ON CONFLICT DO UPDATE):
                    the row nearest 150,000 characters of history at every size, so that the write touches
                    as much at 3 MB as at 1 GB and the figures compare what lies beside it
  turn              a 1-step notebook turn in the big session (a scripted model that answers at once):
                    wall time minus the model call, and the time spent in SessionStore.commit/save_state
  UPDATE floor      one bare `UPDATE sessions SET history = ?` of a row the size of the big session (its
                    text after the turn), autocommit, in a scratch database beside it: what rewriting the
                    whole row costs, the floor the original's format sets
  read-session 50   read-session of the big session (50 messages), from another session
  first load        cireil.load with no side file yet (at setup, and each round on a copy of its own), and
                    the time until list-sessions no longer says the index is being built (the same when the
                    load builds it)
Each is printed against the same operation at the smallest size and, when the original is installed
(tests/originalkit.py's cache; the peer tests install it), against the original's own functions on a copy of
the same file, in a Node process of its own (bench/sessions_scale_original.mts): loadSessions, saveSession +
flushAllSessions of the big session with one turn added, and the read-session / list-sessions /
query-sessions tools. Then issue 35's targets, each met or missed.
Nothing is asserted: the figures are for a person to compare between versions and machines. The machine may
be shared: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import blake3

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # upstream_db (the original's schema) and originalkit (the original)

from upstream_db import create_original_db  # noqa: E402

# bump when the generator writes other rows: cached databases of another version are made again
GENERATOR_VERSION = 2
BIG_ROW = "internal:notebook:big"  # the original's id of the big session
BIG_SESSION = "notebook:big"  # cireil's id of the same row
FOREIGN_CHARS = 150_000  # about the history of the row another connection rewrites, at every size
OTHER_SESSION = "notebook:main"  # where read-session of the big session is called from
RARE = "xylophonic"  # in a few user messages: what query-sessions looks for
QUERY = {"query": RARE, "mode": "raw"}
DRIVER = REPO / "bench" / "sessions_scale_original.mts"
SLUG = "bench"
ENGINE = """\
[local]
apiBase = "{base}"
defaultModel = "scripted"
isGlobalDefault = true
"""


@dataclass(frozen=True)
class Size:
    label: str
    megabytes: float
    big: int  # messages of the big session
    longest: int  # the other sessions have 6 to this many messages

    @property
    def key(self) -> str:
        return f"{self.label.replace(' ', '').replace('.', '_')}-{self.big}"


SIZES = (Size("3 MB", 3, 500, 300), Size("283 MB", 283, 5000, 4000))
HUGE = Size("1.1 GB", 1100, 10000, 6000)


# -- the generator ----------------------------------------------------------------------------------------

_WORDS = """
garden compost water seedlings tomato basil mulch weeds harvest soil bed row spring summer autumn winter
the a and of to in is it that for on with as was at by this be are from or have not but what all we they
deploy server config build test release notebook kernel agent session file folder read write edit branch
please could you check whether why how when tomorrow yesterday today morning evening note list reminder
meeting invoice budget recipe bread oven flour yeast dough starter cheese wine market bike repair chain
tyre brake gear route map train ticket station platform delay weather rain wind sun cloud forecast umbrella
python script function error stack trace log line debug fix patch merge commit review issue ticket bug
database query index table column row migration backup restore disk memory cache thread process signal
café naïve jalapeño smörgåsbord façade über crème déjà vu señor Zürich Malmö København 東京 🌱 🍅 🚲 ☕ ✅
"""
WORDS = tuple(_WORDS.split())
DISCORD_EPOCH_MS = 1420070400000
YEAR_START_MS = 1746057600000  # 2025-05-01T00:00:00Z: a year of history, to 2026-05-01
YEAR_MS = 365 * 86400 * 1000
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TOOLS = ("read", "read", "read", "exec", "exec", "write", "list-dir", "query-sessions", "session-info")


def dumps(value: object) -> str:
    """JSON.stringify's output: compact, non-ASCII as is (the original's save, upstream-formats §4.5)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def iso(ms: int) -> str:
    """Date.toISOString()."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def discord_time(ms: int) -> str:
    """formatDate without the relative part, in UTC (the original's `discord.timestamp`)."""
    when = datetime.fromtimestamp(ms / 1000, UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S+00:00") + f" ({_WEEKDAYS[when.weekday()]}, UTC)"


class Generator:
    """Sessions with the original's message and block shapes; deterministic for a seed."""

    def __init__(self, seed: int, images_dir: Path) -> None:
        self.rng = rng = random.Random(seed)
        self.calls = 0
        self.sequence = 0  # the low bits of each snowflake: ids stay unique within one millisecond
        self.sentences = [self._sentence() for _ in range(4000)]
        self.files = [(self._path(n), self._document(rng.randint(400, 6000))) for n in range(150)]
        self.outputs = [self._listing(rng.randint(150, 3000)) for _ in range(80)]
        self.users = [
            {"displayName": name.capitalize(), "id": self._snowflake(YEAR_START_MS - YEAR_MS), "username": name}
            for name in ("robin", "sam", "alex", "kim", "noor", "jo", "lee", "mika", "ren", "ola", "ty", "ines")
        ]
        images_dir.mkdir(parents=True, exist_ok=True)
        self.images: list[str] = []
        for _ in range(16):  # pictures people posted: files named by their BLAKE3, as the original keeps them
            data = b"RIFF" + rng.randbytes(4) + b"WEBPVP8 " + rng.randbytes(rng.randint(6000, 40000))
            digest = blake3.blake3(data).hexdigest()
            (images_dir / f"{digest}.webp").write_bytes(data)
            self.images.append(digest)

    # text
    def _sentence(self) -> str:
        words = self.rng.choices(WORDS, k=self.rng.randint(4, 18))
        return " ".join(words).capitalize() + self.rng.choice(".....?!")

    def text(self, low: int, high: int) -> str:
        return " ".join(self.rng.choices(self.sentences, k=self.rng.randint(low, high)))

    def _path(self, n: int) -> str:
        folder = self.rng.choice(("/workspace/notes", "/workspace/src", "/memories", "/workspace/projects"))
        return f"{folder}/{self.rng.choice(WORDS[:60])}-{n}.{self.rng.choice(('md', 'md', 'py', 'txt', 'toml'))}"

    def _document(self, size: int) -> str:
        parts = [f"# {self.text(1, 1)}\n"]
        while sum(map(len, parts)) < size:
            parts.append(f"\n## {self.text(1, 1)}\n" if self.rng.random() < 0.15 else f"- {self.text(1, 3)}\n")
        return "".join(parts)

    def _listing(self, size: int) -> str:
        lines = []
        while sum(map(len, lines)) < size:
            lines.append(f"-rw-r--r-- 1 agent agent {self.rng.randint(10, 99999):>6} {self.rng.choice(WORDS)}.txt\n")
        return "".join(lines)

    # ids
    def _snowflake(self, ms: int) -> str:
        self.sequence += 1
        return str(((ms - DISCORD_EPOCH_MS) << 22) | (self.sequence & 0x3FFFFF))

    def _call_id(self) -> str:
        self.calls += 1
        return f"call_{self.rng.getrandbits(64):016x}{self.calls:08d}"

    # messages
    def _tool(self, name: str, session_id: str) -> tuple[dict, dict]:
        """(input, output) of one call, shaped as the original's tools return them."""
        rng = self.rng
        if name == "read":
            path, content = rng.choice(self.files)
            return {"path": path}, {"content": content, "path": path, "size": len(content.encode()), "success": True}
        if name == "exec":
            out = rng.choice(self.outputs)
            command = {"command": rng.choice(("ls", "python3", "grep", "cat")), "args": ["-la", "/workspace"]}
            size = len(out.encode())
            result = {"exitCode": 0, "stderrLength": 0, "stdoutLength": size, "success": True}
            return command, {**result, "inline": True, "stderr": "", "stdout": out, "truncated": False}
        if name == "write":
            path, _ = rng.choice(self.files)
            return {"content": self.text(2, 12), "path": path}, {"path": path, "success": True}
        if name == "list-dir":
            entries = [{"name": f"{rng.choice(WORDS)}.md", "type": "file"} for _ in range(rng.randint(2, 12))]
            return {"path": "/workspace"}, {"entries": entries, "path": "/workspace", "success": True}
        if name == "query-sessions":
            query = rng.choice(WORDS)
            return {"query": query}, {"matches": [], "success": True, "totalMatches": 0}
        return {}, {"platform": session_id.split(":")[0], "session_id": session_id, "success": True}

    def turn(self, session_id: str, when: int, discord: bool, rare: bool) -> list[dict]:
        """One turn as the original stores it: the user message, tool rounds, the respond call and its result."""
        rng = self.rng
        text = self.text(1, 4) if rng.random() > 0.05 else self.text(12, 30)  # now and then a pasted text
        if rare:
            text += f" Is the {RARE} tuner ready?"
        if discord:
            mid = self._snowflake(when)
            block = {
                "content": text,
                "discord": {
                    "author": rng.choice(self.users),
                    "format": "message",
                    "mentionsYou": rng.random() < 0.6,
                    "messageId": mid,
                    "timestamp": discord_time(when),
                },
                "type": "text",
            }
            content: Any = block
            if rng.random() < 0.015:
                picture = {"id": rng.choice(self.images), "mediaType": "image/webp", "type": "image_ref"}
                content = [block, picture]
            out = [{"content": content, "id": mid, "persist": True, "role": "user", "timestamp": when}]
        else:
            out = [{"content": {"content": text, "type": "text"}, "role": "user", "timestamp": when}]
        now = when
        for _ in range(rng.choices((0, 1, 2, 3, 5), (45, 30, 15, 7, 3))[0]):
            now += rng.randint(800, 9000)
            calls = [(self._call_id(), rng.choice(TOOLS)) for _ in range(2 if rng.random() < 0.15 else 1)]
            blocks: list[dict] = []
            if rng.random() < 0.4:
                blocks.append({"thinking": self.text(1, 3), "type": "thinking"})
            answers = []
            for call_id, name in calls:
                args, result = self._tool(name, session_id)
                blocks.append({"id": call_id, "input": args, "name": name, "type": "toolCall"})
                answers.append({"id": call_id, "name": name, "output": result, "type": "toolResponse"})
            # one block is stored as a bare object, two or more as an array (the saver collapses)
            out.append({"content": blocks[0] if len(blocks) == 1 else blocks, "role": "assistant", "timestamp": now})
            stamp = now + rng.randint(500, 4000)
            out += [{"content": a, "role": "toolResponse", "timestamp": stamp} for a in answers]
            now = stamp
        now += rng.randint(800, 9000)
        call_id = self._call_id()
        call = {"id": call_id, "input": {"content": self.text(1, 8)}, "name": "respond", "type": "toolCall"}
        answer = {"content": call, "role": "assistant", "timestamp": now}
        if discord:
            answer["id"] = self._snowflake(now + 300)  # the sent message's id, set after respond
        done = {"id": call_id, "name": "respond", "output": {"final": True, "sent": True}, "type": "toolResponse"}
        return [*out, answer, {"content": done, "role": "toolResponse", "timestamp": now + 600}]

    def session(self, kind: str, messages: int) -> tuple[tuple, int, set[str]]:
        """One sessions row of about `messages` messages (whole turns: at least that many), how many it has,
        and its pictures."""
        rng = self.rng
        channel_id = self._snowflake(YEAR_START_MS - rng.randint(1, YEAR_MS))
        guild_id = self._snowflake(YEAR_START_MS - YEAR_MS - rng.randint(1, YEAR_MS))
        if kind == "guild":
            row_id, meta = f"discord:{channel_id}|{guild_id}", {"channelId": channel_id, "guildId": guild_id}
            meta["isNsfw"] = False
        elif kind == "thread":
            parent = self._snowflake(YEAR_START_MS - YEAR_MS)
            row_id = f"discord:{channel_id}|{guild_id}"
            meta = {"channelId": channel_id, "guildId": guild_id, "isNsfw": False, "parentChannelId": parent}
        elif kind == "dm":
            row_id, meta = f"discord:{channel_id}", {"channelId": channel_id, "isNsfw": False}
        elif kind == "tui":
            row_id, meta = "tui", {}
        else:
            row_id, meta = kind, {}  # internal:<name>
        discord = kind in ("guild", "thread", "dm")
        history: list[dict] = []
        when = YEAR_START_MS + rng.randint(0, YEAR_MS // 2)
        gap = max(60_000, (YEAR_MS // 2) // max(1, messages // 4))
        last_user = None
        while len(history) < messages:
            # the TUI session's first turn has the search word: every database, however small, has a match
            rare = rng.random() < 0.002 or (kind == "tui" and not history)
            turn = self.turn(row_id, when, discord, rare=rare)
            history += turn
            last_user = when
            when = turn[-1]["timestamp"] + rng.randint(gap // 4, gap * 2)
        pictures = {
            part["id"]
            for m in history
            if m["role"] == "user" and isinstance(m["content"], list)
            for part in m["content"]
            if part.get("type") == "image_ref"
        }
        activity = iso(last_user) if discord and last_user is not None else None  # only Discord messages set it
        row = (row_id, kind_channel(kind), dumps(meta), dumps(history), "[]", activity, 0, "{}")
        return row, len(history), pictures


def kind_channel(kind: str) -> str:
    return "discord" if kind in ("guild", "thread", "dm") else ("tui" if kind == "tui" else "internal")


def generate(target: Path, size: Size, seed: int) -> dict:
    """A sessions.db (+ images/) of about size.megabytes in `target`; returns what it holds."""
    target.mkdir(parents=True)
    path = target / "sessions.db"
    create_original_db(path)
    gen = Generator(seed, target / "images")
    rng = gen.rng
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA foreign_keys = ON")
    insert = (
        "INSERT INTO sessions (id, channel, meta, history, opened_files, last_activity, history_cursor,"
        " active_file_sections) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    )
    budget = size.megabytes * 1e6 * 0.985  # pages and record headers take the rest
    written = sessions = messages = big_messages = 0
    guild_row = None
    kinds = ("guild",) * 11 + ("thread",) * 2 + ("dm",) * 4 + ("internal",) * 3
    db.execute("BEGIN")
    plan: list[tuple[str, int]] = [(BIG_ROW, size.big), ("tui", 40)]
    names = iter(("daily-digest", "weekly-review", "inbox-triage", "garden-log", "reading-notes"))
    while written < budget:
        if plan:
            kind, count = plan.pop(0)
        else:
            kind = rng.choice(kinds)
            if kind == "internal":
                kind = f"internal:{next(names, None) or f'job-{sessions}'}"
            count = int(math.exp(rng.uniform(math.log(6), math.log(size.longest))))
        row, n, pictures = gen.session(kind, count)
        db.execute(insert, row)
        db.executemany(  # one row per picture and session, as the original's save adds them (§4.7)
            "INSERT INTO images (id, session_id, media_type) VALUES (?, ?, 'image/webp')",
            [(p, row[0]) for p in sorted(pictures)],
        )
        if row[0] == BIG_ROW:
            big_messages = n
        if guild_row is None and kind == "guild" and n >= 30:
            guild_row = row[0]
        written += len(row[3])
        sessions += 1
        messages += n
    if guild_row is None:  # a database too small to have made one: add one (another connection rewrites one)
        row, n, _ = gen.session("guild", 40)
        db.execute(insert, row)
        sessions += 1
        messages += n
    db.execute("COMMIT")
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # everything in the main file: one file to copy
    db.close()
    info = {
        "version": GENERATOR_VERSION,
        "seed": seed,
        "sessions": sessions,
        "messages": messages,
        "big": {"id": BIG_ROW, "messages": big_messages},
        "bytes": path.stat().st_size,
    }
    (target / "info.json").write_text(json.dumps(info, indent=2) + "\n")
    return info


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cireil" / "bench-sessions"


def cached_database(cache: Path, size: Size, seed: int) -> tuple[Path, dict]:
    """The generated database of this size and seed, made now when the cache lacks it."""
    final = cache / f"{size.key}-seed{seed}-v{GENERATOR_VERSION}"
    info_file = final / "info.json"
    if info_file.is_file():
        return final, json.loads(info_file.read_text())
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / f"{final.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    say(f"generating the {size.label} database (seed {seed}) into {final} ...")
    started = time.perf_counter()
    try:
        info = generate(partial, size, seed)
        os.replace(partial, final)  # whole or not at all: a run stopped midway leaves only a .partial folder
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    say(
        f"  {info['bytes'] / 1e6:,.0f} MB, {info['sessions']} sessions, {info['messages']:,} messages"
        f" in {time.perf_counter() - started:.0f} s"
    )
    return final, info


def copy_database(source: Path, agent_dir: Path) -> None:
    agent_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source / "sessions.db", agent_dir / "sessions.db")
    os.chmod(agent_dir / "sessions.db", 0o600)
    shutil.copytree(source / "images", agent_dir / "images", dirs_exist_ok=True)


# -- measuring --------------------------------------------------------------------------------------------


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class StoreClock:
    """Time spent in SessionStore's write methods (outermost calls only), summed while it is installed."""

    METHODS = ("commit", "save_state")

    def __init__(self) -> None:
        from cireil.runtime.sessions.store import SessionStore

        self.spent = 0.0
        self._depth = threading.local()
        self._originals: dict[str, Callable] = {}
        self._cls = SessionStore
        for name in self.METHODS:
            original = getattr(SessionStore, name, None)
            if original is not None:
                self._originals[name] = original
                setattr(SessionStore, name, self._wrap(original))
        self.missing = [name for name in self.METHODS if name not in self._originals]

    def _wrap(self, original: Callable) -> Callable:
        clock = self

        def clocked(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(clock._depth, "n", 0)
            clock._depth.n = depth + 1
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                clock._depth.n = depth
                if depth == 0:
                    clock.spent += time.perf_counter() - started

        return clocked

    def restore(self) -> None:
        for name, original in self._originals.items():
            setattr(self._cls, name, original)


class OpFailed(Exception):
    pass


@dataclass
class Samples:
    """Milliseconds per (size label, operation); the first error of each, for the table."""

    ms: dict[tuple[str, str], list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[tuple[str, str], str] = field(default_factory=dict)

    def run(self, size: str, op: str, fn: Callable[[], float | None]) -> None:
        gc.collect()  # outside the clock, as the original's driver does: no op pays for the one before's garbage
        try:
            value = fn()
        except Exception as exc:  # one failed operation must not lose the others' figures
            if (size, op) not in self.errors:
                self.errors[(size, op)] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                say(f"  {size} {op}: {self.errors[(size, op)]}")
            return
        if value is not None:
            self.ms[(size, op)].append(value)

    def median(self, size: str, op: str) -> float | None:
        values = self.ms.get((size, op))
        return statistics.median(values) if values else None


def ok_result(result: Any) -> Any:
    if not result.success:
        raise OpFailed(f"{result.tool} failed: {json.dumps(result.data)[:300]}")
    return result


def indexing_note(result: Any) -> str | None:
    """What a list/query result says about an index still being built, if anything (the store may build it in
    the background after the first load: the round's figures are taken once it is done)."""
    for key, value in result.data.items():
        if "index" in key.lower() and value not in (None, False, 0, "", [], {}):
            return f"{key}: {json.dumps(value)[:120]}"
        if isinstance(value, str) and "still indexing" in value.lower():
            return value[:120]
    return None


def agent_copy(directory: Path, source: Path, llm: Any) -> Path:
    """A new agent directory holding a copy of the generated database, its model the scripted one."""
    from cireil.runtime.scaffold import init

    made = init(directory)
    for name in ("cron.toml", "heartbeat.toml"):
        (made / "config" / name).unlink(missing_ok=True)
    (made / "sessions.db").unlink(missing_ok=True)
    copy_database(source, made)
    (made / "config" / "engine.toml").write_text(ENGINE.format(base=llm.base_url))
    return made


def wait_for_index(agent: Any, limit_s: float = 1800) -> None:
    """Until list-sessions no longer says the index is being built; the store's own wait when it has one
    (no polling beside the build), else list-sessions asked every 0.1 s."""
    started = time.perf_counter()
    waiter = getattr(agent.store, "wait_for_index", None)
    if waiter is not None and not waiter(limit_s):
        raise OpFailed(f"the index was still being built after {limit_s:.0f} s")
    said = 0.0
    while (note := indexing_note(agent.call("list-sessions"))) is not None:
        waited = time.perf_counter() - started
        if waited > limit_s:
            raise OpFailed(f"the index was still being built after {limit_s:.0f} s: {note}")
        if waited - said >= 5:
            say(f"  waiting for the index ({waited:.0f} s): {note}")
            said = waited
        time.sleep(0.1)


def first_open(directory: Path) -> tuple[Any, float, float]:
    """(the agent, ms until cireil.load returned, ms until search was ready) of a load with no side file."""
    import cireil
    from cireil.runtime.sessions.sidestore import SIDE_FILE

    for suffix in ("", "-wal", "-shm"):
        (directory / f"{SIDE_FILE}{suffix}").unlink(missing_ok=True)
    started = time.perf_counter()
    agent = cireil.load(directory)
    loaded = (time.perf_counter() - started) * 1000
    try:
        wait_for_index(agent)
    except BaseException:
        agent.close()
        raise
    return agent, loaded, (time.perf_counter() - started) * 1000  # ready = loaded when the load builds it


class FirstOpens:
    """The first open, again each round, on a copy of the database of its own (the long-lived agent keeps
    its side file): one build is one sample, noisy on a shared machine."""

    def __init__(self, root: Path, source: Path, llm: Any) -> None:
        self.dir = agent_copy(root / "first", source, llm)

    def run(self, label: str, samples: Samples) -> None:
        def opened() -> None:
            agent, loaded, ready = first_open(self.dir)
            agent.close()
            samples.ms[(label, "first")].append(loaded)
            samples.ms[(label, "indexed")].append(ready)

        samples.run(label, "first", opened)


class CireilSide:
    """One size's agent directory as cireil uses it: a long-lived agent for calls and turns, a scripted model,
    a writer standing in for the original, a scratch database for the UPDATE floor."""

    def __init__(self, root: Path, source: Path, info: dict, llm: Any, clock: StoreClock) -> None:
        import cireil

        self.cireil = cireil
        self.clock = clock
        self.info = info
        self.dir = agent_copy(root / "agent", source, llm)
        self.llm = llm
        self.agent, self.first_load_ms, self.index_ready_ms = first_open(self.dir)
        # the one other connection: what the original's save does to a Discord row it holds
        self.foreign = sqlite3.connect(f"file:{self.dir / 'sessions.db'}?mode=rw", uri=True, isolation_level=None)
        self.foreign.execute("PRAGMA busy_timeout = 5000")
        # the Discord row of history nearest FOREIGN_CHARS, at every size: the write touches as much data at
        # 3 MB as at 1 GB, so that its figures compare what the database holds beside that row
        self.foreign_id, self.foreign_chars = self.foreign.execute(
            "SELECT id, length(history) FROM sessions WHERE channel = 'discord'"
            " ORDER BY abs(length(history) - ?), id LIMIT 1",
            (FOREIGN_CHARS,),
        ).fetchone()
        row = self.foreign.execute(
            "SELECT channel, meta, history FROM sessions WHERE id = ?", (self.foreign_id,)
        ).fetchone()
        self.foreign_row = list(row)
        self.foreign_turns = 0
        # the floor: a scratch database in the original's format holding one row as big as the big session
        self.floor_path = root / "floor" / "sessions.db"
        self.floor_path.parent.mkdir()
        create_original_db(self.floor_path)
        self.floor = sqlite3.connect(self.floor_path, isolation_level=None)
        self.floor.execute(
            "INSERT INTO sessions (id, channel, meta, history, opened_files) VALUES (?, 'internal', '{}', ?, '[]')",
            (BIG_ROW, self._big_text()),
        )
        # warm up: imports, the first decode of the big session, the first connection to the model
        self.agent.use_session(BIG_SESSION)
        ok_result(self.agent.call("session-info"))
        self._turn()
        self.read50()

    def _big_text(self) -> str:
        row = self.foreign.execute("SELECT history FROM sessions WHERE id = ?", (BIG_ROW,)).fetchone()
        return row[0]

    # -- operations: each returns milliseconds ------------------------------------------------------
    def load(self) -> float:
        started = time.perf_counter()
        agent = self.cireil.load(self.dir)
        ms = (time.perf_counter() - started) * 1000
        agent.close()
        return ms

    def load_after_write(self) -> float:
        """A load after the original saved a row: the file is not as the index was last complete for it."""
        self.foreign_write()
        return self.load()

    def call(self) -> tuple[float, float]:
        self.agent.use_session(BIG_SESSION)
        before = self.clock.spent
        started = time.perf_counter()
        ok_result(self.agent.call("session-info"))
        return (time.perf_counter() - started) * 1000, (self.clock.spent - before) * 1000

    def foreign_write(self) -> None:
        """One turn appended to a Discord row and the whole row written back, as the original's flush does."""
        channel, meta, history = self.foreign_row
        self.foreign_turns += 1
        now = int(time.time() * 1000)
        call_id = f"call_foreign{self.foreign_turns:08d}"
        turn = [
            {"content": {"content": f"foreign turn {self.foreign_turns}", "type": "text"}, "role": "user"},
            {"content": {"id": call_id, "input": {"content": "ok"}, "name": "respond", "type": "toolCall"}},
            {"content": {"id": call_id, "name": "respond", "output": {"final": True, "sent": True}}},
        ]
        turn[0].update(persist=True, timestamp=now)
        turn[1].update(role="assistant", timestamp=now + 1)
        turn[2]["content"]["type"] = "toolResponse"
        turn[2].update(role="toolResponse", timestamp=now + 2)
        history = history[:-1] + "," + ",".join(map(dumps, turn)) + "]"
        self.foreign_row[2] = history
        self.foreign.execute(
            "INSERT INTO sessions (active_file_sections, channel, history, history_cursor, id, last_activity, meta,"
            " opened_files) VALUES ('{}', ?, ?, 0, ?, ?, ?, '[]') ON CONFLICT (id) DO UPDATE SET"
            " active_file_sections = excluded.active_file_sections, history = excluded.history,"
            " history_cursor = excluded.history_cursor, last_activity = excluded.last_activity,"
            " meta = excluded.meta, opened_files = excluded.opened_files",
            (channel, history, self.foreign_id, iso(now), meta),
        )

    def list_after_write(self) -> float:
        self.foreign_write()
        started = time.perf_counter()
        result = ok_result(self.agent.call("list-sessions"))
        ms = (time.perf_counter() - started) * 1000
        if not result.get("sessions"):
            raise OpFailed(f"list-sessions found nothing: {json.dumps(result.data)[:200]}")
        return ms

    def query_after_write(self) -> float:
        self.foreign_write()
        started = time.perf_counter()
        result = ok_result(self.agent.call("query-sessions", **QUERY))
        ms = (time.perf_counter() - started) * 1000
        if not result.get("totalMatches"):
            raise OpFailed(f"query-sessions found no {RARE!r}: {json.dumps(result.data)[:200]}")
        return ms

    def _turn(self) -> tuple[float, float, float]:
        before = self.clock.spent
        started = time.perf_counter()
        outcome = self.agent.turn("bench: one more note", session=BIG_SESSION)
        wall = time.perf_counter() - started
        if outcome.error or outcome.ended != "respond":
            raise OpFailed(f"the turn ended {outcome.ended!r}: {outcome.error}")
        self.llm.requests.clear()  # each holds the whole request body
        return (wall - outcome.model_s) * 1000, (self.clock.spent - before) * 1000, outcome.model_s * 1000

    def turn(self) -> tuple[float, float, float, float]:
        """(own time, commit time, model time, UPDATE floor with the row as the turn left it), milliseconds."""
        own, commit, model = self._turn()
        text = self._big_text()
        started = time.perf_counter()
        self.floor.execute("UPDATE sessions SET history = ? WHERE id = ?", (text, BIG_ROW))
        floor = (time.perf_counter() - started) * 1000
        return own, commit, model, floor

    def read50(self) -> float:
        self.agent.use_session(OTHER_SESSION)  # in its own session read-session would read the live copy
        try:
            started = time.perf_counter()
            result = ok_result(self.agent.call("read-session", id=BIG_SESSION, limit=50))
            ms = (time.perf_counter() - started) * 1000
        finally:
            self.agent.use_session(BIG_SESSION)
        if len(result.get("messages", [])) != 50:
            raise OpFailed(f"read-session returned {len(result.get('messages', []))} messages, not 50")
        return ms

    def close(self) -> None:
        self.agent.close()
        self.foreign.close()
        self.floor.close()


class OriginalSide:
    """The original's own functions on a copy of the same database, in a Node process (sessions_scale_original.mts)."""

    def __init__(self, original: Any, root: Path, source: Path) -> None:
        home = root / "home"
        home.mkdir(parents=True)
        agent_dir = Path(os.path.realpath(home)) / ".cireilclaw" / "agents" / SLUG
        copy_database(source, agent_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CIREIL_", "NODE_OPTIONS"))}
        env.update(
            HOME=str(home),
            NO_COLOR="1",
            PATH=f"{original.node.parent}{os.pathsep}{env.get('PATH', '')}",
            CIREIL_BENCH_CONFIG=json.dumps({"src": str(original.runtime / "src"), "slug": SLUG}),
        )
        self.stderr_file = (root / "original.stderr").open("w+")
        self.proc = subprocess.Popen(
            [str(original.node), "--expose-gc", "--import", original.tsx_loader.as_uri(), str(DRIVER)],
            cwd=original.runtime,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            text=True,
            bufsize=1,
            start_new_session=True,  # a Ctrl-C in the terminal stops the bench, which stops this process
        )
        ready = self._read(120)
        if not ready.get("ready"):
            raise OpFailed(f"the original's bench driver did not start: {ready.get('error')}{self._stderr_tail()}")
        self.ids = 0

    def _stderr_tail(self) -> str:
        self.stderr_file.flush()
        self.stderr_file.seek(0)
        tail = self.stderr_file.read()[-2000:]
        return f"\n--- its stderr:\n{tail}" if tail.strip() else ""

    def _read(self, timeout: float) -> dict:
        assert self.proc.stdout is not None
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if not box:
            self.proc.kill()  # the ops after this one fail at once, rather than each waiting as long
            raise OpFailed(f"the original's bench driver gave no answer in {timeout:.0f} s{self._stderr_tail()}")
        if not box[0]:
            raise OpFailed(f"the original's bench driver exited ({self.proc.poll()}){self._stderr_tail()}")
        return json.loads(box[0])

    def request(self, op: dict, timeout: float = 600) -> dict:
        self.ids += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({**op, "id": self.ids}) + "\n")
        self.proc.stdin.flush()
        while True:
            answer = self._read(timeout)
            if answer.get("id") == self.ids:
                break
        if not answer.get("ok"):
            raise OpFailed(f"the original's {op['op']} failed: {answer.get('error')}")
        return answer

    def load(self) -> float:
        answer = self.request({"op": "load", "keep": BIG_ROW})
        if answer.get("kept") is None:
            raise OpFailed(f"the original's loadSessions has no {BIG_ROW} (it skipped the row?)")
        return answer["ms"]

    def save(self) -> float:
        return self.request({"op": "save"})["ms"]

    def tool(self, name: str, arguments: dict) -> float:
        return self.request({"op": "tool", "name": name, "input": arguments})["ms"]

    def close(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):  # a driver that died (out of heap) has closed its end
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr_file.close()


def find_original(wanted: bool) -> tuple[Any, str | None]:
    """The installed original, or None and why not. Only a complete install is used: none is made here."""
    if not wanted:
        return None, "--no-original"
    import originalkit

    cache = originalkit.default_cache()
    if not (cache / "complete").is_file():
        return None, f"not installed in {cache} (running tests/peer installs it)"
    try:
        return originalkit.install(), None
    except originalkit.OriginalUnavailable as exc:
        return None, str(exc)


# -- the run ------------------------------------------------------------------------------------------------


def measure_round(size: Size, cireil_side: CireilSide, original: OriginalSide | None, samples: Samples) -> None:
    label = size.label

    def call() -> float:
        ms, store_ms = cireil_side.call()
        samples.ms[(label, "call.store")].append(store_ms)
        return ms

    def turn() -> float:
        own, commit, model, floor = cireil_side.turn()
        samples.ms[(label, "turn.commit")].append(commit)
        samples.ms[(label, "turn.model")].append(model)
        samples.ms[(label, "floor")].append(floor)
        return own

    samples.run(label, "load", cireil_side.load)
    samples.run(label, "load.after", cireil_side.load_after_write)
    samples.run(label, "call", call)
    samples.run(label, "list", cireil_side.list_after_write)
    samples.run(label, "query", cireil_side.query_after_write)
    samples.run(label, "read50", cireil_side.read50)
    samples.run(label, "turn", turn)
    if original is not None:
        samples.run(label, "o.load", original.load)
        samples.run(label, "o.save", original.save)
        samples.run(label, "o.read50", lambda: original.tool("read-session", {"id": BIG_ROW, "limit": 50}))
        samples.run(label, "o.list", lambda: original.tool("list-sessions", {}))
        samples.run(label, "o.query", lambda: original.tool("query-sessions", QUERY))


ROWS = (  # (operation, what the table calls it, the original's counterpart)
    ("load", "load, warm (cireil.load)", "o.load"),
    ("load.after", "  the same after a foreign write", "o.load"),
    ("call", "tool call: session-info, big session", None),
    ("call.store", "  of which sessions.db writes", None),
    ("list", "list-sessions after a foreign write", "o.list"),
    ("query", "query-sessions after a foreign write", "o.query"),
    ("turn", "turn, 1 step: own time (wall - model)", None),
    ("turn.commit", "  of which commit (original: save+flush)", "o.save"),
    ("floor", "bare UPDATE of a row that size (floor)", None),
    ("read50", "read-session, 50 messages", "o.read50"),
    ("first", "first load, no side index", None),
    ("indexed", "  until search is ready (original: load)", "o.load"),
)


def fmt_ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x" if value < 100 else f"{value:,.0f}x"


def table(sizes: list[Size], samples: Samples, infos: dict[str, dict], has_original: bool) -> list[str]:
    small = sizes[0].label
    head = f"{'operation (median ms)':<42}"
    sub = f"{'':<42}"
    for size in sizes:
        info = infos[size.label]
        name = f"{info['bytes'] / 1e6:,.0f} MB, {info['big']['messages']:,} msg"
        width = 34 if has_original else 17
        head += f" | {name:^{width}}"
        sub += f" | {'cireil':>9} {'xsmall':>7}" + (f" {'original':>9} {'/orig':>6}" if has_original else "")
    lines = [head, sub, "-" * len(sub)]
    for op, text, theirs in ROWS:
        line = f"{text:<42}"
        for size in sizes:
            mine = samples.median(size.label, op)
            base = samples.median(small, op)
            ratio = mine / base if mine is not None and base else None
            cell = f" | {fmt_ms(mine):>9} {fmt_ratio(ratio) if size.label != small else '':>7}"
            if has_original:
                other = samples.median(size.label, theirs) if theirs else None
                versus = mine / other if mine is not None and other else None
                cell += f" {fmt_ms(other):>9} {fmt_ratio(versus):>6}"
            line += cell
        lines.append(line)
    return lines


def verdicts(sizes: list[Size], samples: Samples, has_original: bool) -> list[str]:
    """Issue 35's "Done when", each figure against its target (at every size but the smallest)."""
    small = sizes[0].label
    out = []

    def check(label: str, what: str, value: float | None, limit: float | None, unit: str = "ms") -> None:
        if value is None or limit is None:
            out.append(f"  {label:>7}  {what}: not measured")
            return
        verdict = "met" if value <= limit else "MISSED"
        out.append(f"  {label:>7}  {what}: {fmt_ms(value)} {unit} <= {fmt_ms(limit)} {unit}: {verdict}")

    m = samples.median
    for size in sizes[1:]:
        label = size.label
        for op, name in (
            ("call", "tool call"),
            ("load", "warm load"),
            ("load.after", "warm load after a foreign write"),
            ("list", "first list after a foreign write"),
        ):
            base = m(small, op)
            check(label, f"{name} within 2x the small database's", m(label, op), 2 * base if base else None)
        base = m(small, "query")
        check(label, "first query after a foreign write within 2x", m(label, "query"), 2 * base if base else None)
        floor = m(label, "floor")
        check(label, "turn commit <= 1.5x the bare UPDATE", m(label, "turn.commit"), 1.5 * floor if floor else None)
        if has_original:
            check(label, "turn commit <= the original's save+flush", m(label, "turn.commit"), m(label, "o.save"))
        own_small = m(small, "turn")
        limit = 2 * own_small + floor if own_small is not None and floor is not None else None
        check(label, "turn's own time <= 2x the small one's + the floor", m(label, "turn"), limit)
        if has_original:
            theirs = m(label, "o.read50")
            check(label, "read-session 50 <= half the original's", m(label, "read50"), theirs / 2 if theirs else None)
    for size in sizes:
        check(size.label, "first load under a second", m(size.label, "first"), 1000.0)
        if has_original:
            check(
                size.label,
                "search ready no later than the original's load",
                m(size.label, "indexed"),
                m(size.label, "o.load"),
            )
    return out


@contextmanager
def workspace(keep: bool) -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="cireil-bench-sessions-"))
    try:
        yield root
    finally:
        if keep:
            say(f"kept: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true", help="add the ~1.1 GB database (slow to generate)")
    parser.add_argument("--reps", type=int, default=5, help="rounds per size (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", type=Path, default=None, help=f"generated databases (default {default_cache()})")
    parser.add_argument("--no-original", action="store_true", help="do not time the original, even if installed")
    parser.add_argument("--keep", action="store_true", help="keep the working copies (printed at the end)")
    args = parser.parse_args()
    sizes = [*SIZES, HUGE] if args.big else list(SIZES)
    cache = args.cache or default_cache()
    sources = {size.label: cached_database(cache, size, args.seed) for size in sizes}
    infos = {label: info for label, (_, info) in sources.items()}
    original, why_not = find_original(not args.no_original)
    say(f"the original: {'installed, timed alongside' if original else f'not timed ({why_not})'}")

    from cireil.testing.scripted_llm import ScriptedLLM, reply

    samples = Samples()
    clock = StoreClock()
    if clock.missing:
        say(f"SessionStore has no {', '.join(clock.missing)}: the commit column counts the others only")
    started = time.perf_counter()
    cireil_sides: dict[str, CireilSide] = {}
    original_sides: dict[str, OriginalSide] = {}
    firsts: dict[str, FirstOpens] = {}
    with (
        workspace(args.keep) as root,
        ScriptedLLM(default=reply.tool_calls(("respond", {"content": "Noted."}))) as llm,
    ):
        try:
            # the runtime's modules imported before any first load is timed: a process imports them once
            import cireil
            from cireil.runtime.scaffold import init

            cireil.load(init(root / "warm-up")).close()
            for size in sizes:
                source, info = sources[size.label]
                say(f"{size.label}: setting up (cireil's first load builds its index)")
                side = CireilSide(root / size.key / "cireil", source, info, llm, clock)
                cireil_sides[size.label] = side
                samples.ms[(size.label, "first")].append(side.first_load_ms)
                samples.ms[(size.label, "indexed")].append(side.index_ready_ms)
                firsts[size.label] = FirstOpens(root / size.key, source, llm)
                if original is not None:
                    try:
                        original_sides[size.label] = OriginalSide(original, root / size.key / "original", source)
                        original_sides[size.label].load()  # warm: its modules compiled, the file in the cache
                    except OpFailed as exc:
                        say(f"  the original is not timed at {size.label}: {exc}")
            for rep in range(args.reps):
                say(f"round {rep + 1} of {args.reps}")
                for size in sizes:
                    firsts[size.label].run(size.label, samples)
                    measure_round(size, cireil_sides[size.label], original_sides.get(size.label), samples)
        finally:
            for side in cireil_sides.values():
                side.close()
            for other in original_sides.values():
                other.close()
            clock.restore()
    has_original = bool(original_sides)
    print(f"\nsessions at scale: median of {args.reps} rounds, interleaved; {time.perf_counter() - started:.0f} s")
    for size in sizes:
        info = infos[size.label]
        rewritten = cireil_sides[size.label].foreign_chars if size.label in cireil_sides else None
        print(
            f"  {size.label:>7}: {info['bytes'] / 1e6:,.1f} MB, {info['sessions']} sessions,"
            f" {info['messages']:,} messages; the big one {info['big']['messages']:,}"
            + (f"; the row rewritten by another connection {rewritten:,} characters" if rewritten else "")
        )
    print()
    for line in table(sizes, samples, infos, has_original):
        print(line)
    print("\nxsmall: against the same operation at the smallest size; /orig: cireil's time over the original's")
    if not has_original:
        print(f"the original was not timed: {why_not}")
    print("\nissue 35's targets")
    for line in verdicts(sizes, samples, has_original):
        print(line)
    if samples.errors:
        print("\nfailed operations (their cells show what succeeded)")
        for (label, op), error in sorted(samples.errors.items()):
            print(f"  {label} {op}: {error}")
    print(f"\nload average while measuring: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
