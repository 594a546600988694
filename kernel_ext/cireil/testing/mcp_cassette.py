"""An MCP cassette: one recorded turn's MCP traffic, answering the same calls again.

    cassette = Cassette(recorded)                       # the dict the recorder stores (format below)
    call = cassette.answer("demo", "add", {"b": 2, "a": 1})   # the recorded call: its "result" or "error"
    cassette.answer("demo", "add", {"a": 1, "b": 5})    # Unrecorded: names the nearest recorded arguments

The format ("cireil-mcp-cassette/1"), per server: `revision`, `serverInfo`, `instructions`, `tools` (tools/list's
tool objects) and `calls` (each tools/call in order: `tool`, `arguments`, then `result` or `error`; both null is
a call recorded without an answer, e.g. one that timed out; its optional `notRecorded` says why).

Matching: server and tool by name; arguments JSON-equal, i.e. equal as JSON values: key order ignored,
numbers compared by value (1 and 1.0 are the same JSON number, as a JavaScript or Go client may send either),
booleans never equal to numbers (true is not 1), strings by code point. Identical calls are answered in their
recorded order, each recorded answer once; one more identical call than was recorded is Unrecorded.

Nearest: among the recorded calls of the tool, the arguments with the fewest differing top-level keys (a key
missing on one side counts as differing; a tie goes to the earlier call). When the tool was never called on
that server, the tool names recorded there; when the server is unknown, the recorded server names.

Standard library only, like all of cireil.testing: the mock server (mcp_mock.py) and replay both use it.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

FORMAT = "cireil-mcp-cassette/1"
MAX_BYTES = 64 * 1024 * 1024  # of the cassette as JSON
MAX_DEPTH = 100  # nesting of objects and arrays
_SHOWN = 300  # characters of arguments quoted in a message
_NEAREST = 3  # recorded arguments named at most

__all__ = ["FORMAT", "Cassette", "Unrecorded", "canonical", "cassette_from", "load_cassette"]


class Unrecorded(LookupError):
    """A call the cassette has no (unused) answer for. `nearest`: recorded arguments of that tool, closest first,
    or the tool names recorded on that server (tool never called), or the server names (server unknown)."""

    def __init__(self, server: str, tool: str, arguments: Any, nearest: list[Any], reason: str = "") -> None:
        self.server, self.tool, self.arguments, self.nearest = server, tool, arguments, nearest
        self.reason = reason
        super().__init__(self.message)

    @property
    def message(self) -> str:
        """One line: what was asked, why it has no answer, what was recorded instead."""
        asked = f"no recorded answer for MCP server {self.server!r} tool {self.tool!r}"
        asked += f" with arguments {_shown(self.arguments)}"
        return f"{asked}: {self.reason}" if self.reason else asked

    def data(self) -> dict[str, Any]:
        """The JSON-RPC error's `data`: what was asked and what was recorded."""
        return {"server": self.server, "tool": self.tool, "arguments": self.arguments, "nearest": self.nearest}


class Cassette:
    """A validated cassette. `answer` is thread-safe: a mock server answers from several threads."""

    def __init__(self, data: dict[str, Any]) -> None:
        _check_bounds(data)
        self.data: dict[str, Any] = _validated(data)
        self._lock = threading.Lock()
        self._used: dict[str, list[bool]] = {name: [False] * len(s["calls"]) for name, s in self.servers.items()}
        # the calls of each (server, tool, canonical arguments), in recorded order: computed once
        self._index: dict[tuple[str, str, str], list[int]] = {}
        for name, record in self.servers.items():
            for i, c in enumerate(record["calls"]):
                self._index.setdefault((name, c["tool"], canonical(c["arguments"])), []).append(i)

    @property
    def servers(self) -> dict[str, dict[str, Any]]:
        return self.data["servers"]

    def server(self, name: str) -> dict[str, Any]:
        """One server's record; KeyError naming the recorded servers when there is none."""
        try:
            return self.servers[name]
        except KeyError:
            raise KeyError(f"the cassette has no MCP server {name!r}; recorded: {_names(self.servers)}") from None

    def only(self, name: str) -> Cassette:
        """A cassette of that one server (KeyError naming the recorded ones when it is not there)."""
        return Cassette({**self.data, "servers": {name: self.server(name)}})

    def reset(self) -> None:
        """Every recorded answer unused again, as when the cassette was loaded."""
        with self._lock:
            for used in self._used.values():
                used[:] = [False] * len(used)

    def answer(self, server: str, tool: str, arguments: Any) -> dict[str, Any]:
        """The next unused recorded call of `tool` on `server` with JSON-equal arguments (a copy:
        tool, arguments, result, error); raises Unrecorded when there is none."""
        if arguments is None:
            arguments = {}  # tools/call's arguments are optional: absent and {} are the same call
        record = self.servers.get(server)
        if record is None:
            raise Unrecorded(server, tool, arguments, sorted(self.servers), f"recorded servers: {_names(self.servers)}")
        try:
            key = canonical(arguments)
        except ValueError as exc:
            raise Unrecorded(server, tool, arguments, [], f"the arguments are not JSON ({exc})") from None
        with self._lock:
            used = self._used[server]
            same = self._index.get((server, tool, key), [])
            for i in same:
                if not used[i]:
                    used[i] = True
                    return json.loads(json.dumps(record["calls"][i]))  # the caller may change its copy
        if same:
            count = f"{len(same)} recorded call{'s' if len(same) > 1 else ''}"
            reason = f"all {count} with these arguments were already answered"
            raise Unrecorded(server, tool, arguments, [record["calls"][same[0]]["arguments"]], reason)
        nearest = self.nearest(server, tool, arguments)
        if record.get("notRecorded"):
            raise Unrecorded(server, tool, arguments, nearest, f"the recording says: {record['notRecorded']}")
        if any(c["tool"] == tool for c in record["calls"]):
            shown = "; ".join(_shown(a) for a in nearest)
            raise Unrecorded(server, tool, arguments, nearest, f"nearest recorded arguments: {shown}")
        listed = "tools called" if any(record["calls"]) else "tools listed"
        raise Unrecorded(server, tool, arguments, nearest, f"{listed} on {server!r}: {_names(nearest) or '(none)'}")

    def nearest(self, server: str, tool: str, arguments: Any) -> list[Any]:
        """The recorded arguments of `tool` closest to `arguments` (at most 3, closest first, each once), or the
        tool names recorded on the server when `tool` was never called there."""
        record = self.servers.get(server)
        if record is None:
            return sorted(self.servers)
        calls = [c["arguments"] for c in record["calls"] if c["tool"] == tool]
        if not calls:
            called = list(dict.fromkeys(c["tool"] for c in record["calls"]))
            return called or [t["name"] for t in record["tools"]]
        seen: set[str] = set()
        ranked: list[tuple[int, int, Any]] = []
        for order, args in enumerate(calls):
            key = canonical(args)
            if key not in seen:
                seen.add(key)
                ranked.append((distance(arguments, args), order, args))
        ranked.sort(key=lambda r: (r[0], r[1]))
        return [args for _, _, args in ranked[:_NEAREST]]

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(self.data))

    @classmethod
    def from_wire_log(cls, exported: dict | list) -> Cassette:
        """A cassette from a wire log exported by `%cireil mcp log --export` (its JSON lines read into a list of
        exchanges, or one exchange): tools from tools/list answers (later listings win per tool name), calls from
        each tools/call request and the response with its id. Exchanges cut by the log's size limit, or left
        without an answer, are skipped: a call to them is Unrecorded."""
        exchanges = [exported] if isinstance(exported, dict) else exported
        if not isinstance(exchanges, list):
            raise ValueError(f"a wire log export is a list of exchanges, not {type(exported).__name__}")
        servers: dict[str, dict[str, Any]] = {}
        tools: dict[str, dict[str, dict]] = {}
        for n, exchange in enumerate(exchanges):
            if not isinstance(exchange, dict):
                raise ValueError(f"$[{n}]: an exchange is a JSON object, not {_kind(exchange)}")
            name = exchange.get("server")
            if not isinstance(name, str) or not name:
                raise ValueError(f"$[{n}].server: needs the server's name (a non-empty string)")
            record = servers.setdefault(
                name, {"revision": None, "serverInfo": None, "instructions": None, "tools": [], "calls": []}
            )
            if isinstance(exchange.get("revision"), str):
                record["revision"] = exchange["revision"]
            request = (exchange.get("request") or {}).get("body") if isinstance(exchange.get("request"), dict) else None
            if not isinstance(request, dict) or not isinstance(request.get("method"), str):
                continue  # a notification's answer, a DELETE, a body cut to text
            response = _response_to(request, exchange.get("response"))
            if response is None:
                continue
            method, result = request["method"], response.get("result")
            if method in ("initialize", "server/discover") and isinstance(result, dict):
                info = result.get("serverInfo") or (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
                record["serverInfo"] = info if isinstance(info, dict) else record["serverInfo"]
                if isinstance(result.get("instructions"), str):
                    record["instructions"] = result["instructions"]
                if method == "initialize" and isinstance(result.get("protocolVersion"), str):
                    record["revision"] = result["protocolVersion"]
            elif method == "tools/list" and isinstance(result, dict) and isinstance(result.get("tools"), list):
                listed = tools.setdefault(name, {})
                for tool in result["tools"]:
                    if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                        listed[tool["name"]] = tool
            elif method == "tools/call":
                params = request.get("params") if isinstance(request.get("params"), dict) else {}
                call = {"tool": params.get("name"), "arguments": params.get("arguments") or {}}
                call["result"] = result if isinstance(result, dict) else None
                call["error"] = response.get("error") if isinstance(response.get("error"), dict) else None
                if isinstance(call["tool"], str) and isinstance(call["arguments"], dict):
                    record["calls"].append(call)
        for name, listed in tools.items():
            servers[name]["tools"] = list(listed.values())
        if not servers:
            raise ValueError("the wire log holds no MCP exchange to serve")
        return cls({"format": FORMAT, "servers": servers})


def load_cassette(text: str) -> Cassette:
    """A cassette from a file's text: a cassette's JSON, or a wire log export (JSON lines, or a JSON list)."""
    if len(text) > MAX_BYTES:
        raise ValueError(f"the file is over {MAX_BYTES // (1024 * 1024)} MiB; not read")
    try:
        whole = _loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict) and "servers" in whole:
        return Cassette(whole)
    if isinstance(whole, (list, dict)):
        return Cassette.from_wire_log(whole)
    entries = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                entries.append(_loads(line))
            except ValueError as exc:
                raise ValueError(f"line {n}: not JSON ({exc}); expected a cassette or a wire log export") from None
    return Cassette.from_wire_log(entries)


def cassette_from(
    source: Any,
    *,
    turn: int | None = None,
    server: str | None = None,
    recorded: Callable[[Path, int], dict | None] | None = None,
) -> Cassette:
    """The cassette a SOURCE names: a Cassette or its dict; an agent directory with `turn` (read through
    `recorded(agent_dir, turn)`, handed down by the caller: this module reads no recordings file); or a file
    holding a cassette or a wire log export. `server` keeps that one server. ValueError says what is wrong."""
    if isinstance(source, Cassette):
        cassette = source
    elif isinstance(source, dict):
        cassette = Cassette(source)
    else:
        path = Path(source).expanduser()
        if path.is_dir():
            if turn is None:
                raise ValueError(f"{path} is an agent directory: name the recorded turn (--turn N, turn=N)")
            if recorded is None:
                raise ValueError(f"{path}: reading an agent's recordings needs cireil (use cireil.mcp_mock)")
            data = recorded(path, turn)
            if data is None:
                raise ValueError(f"{path}: turn {turn} has no recorded MCP traffic (see %cireil usage for turns)")
            cassette = Cassette(data)
        elif path.is_file():
            if turn is not None:
                raise ValueError(f"{path} is a file (a wire log export or a cassette): --turn is for agent directories")
            if path.stat().st_size > MAX_BYTES:
                raise ValueError(f"{path} is over {MAX_BYTES // (1024 * 1024)} MiB; not read")
            try:
                cassette = load_cassette(path.read_text(encoding="utf-8", errors="replace"))
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
        else:
            raise ValueError(f"{path}: no such file or agent directory")
    if server is not None:
        try:
            cassette = cassette.only(server)
        except KeyError as exc:
            raise ValueError(exc.args[0]) from None
    return cassette


# -- JSON equality ------------------------------------------------------------------------------------------


def canonical(value: Any) -> str:
    """The text two JSON-equal values share (see the module's docstring); ValueError if `value` is not JSON."""
    return json.dumps(_normal(value, 0), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _normal(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise ValueError(f"nested deeper than {MAX_DEPTH}")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a JSON number")
        return int(value) if value.is_integer() else value  # 1.0 and 1 are one JSON number
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise ValueError("an object key is not a string")
        return {k: _normal(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v, depth + 1) for v in value]
    raise ValueError(f"a {type(value).__name__} is not a JSON value")


def distance(asked: Any, recorded: Any) -> int:
    """How many top-level keys differ (present on one side only, or with values not JSON-equal); for arguments
    that are not both objects, 0 when JSON-equal else 1."""
    if not (isinstance(asked, dict) and isinstance(recorded, dict)):
        return 0 if _same(asked, recorded) else 1
    return sum(
        1
        for k in asked.keys() | recorded.keys()
        if k not in asked or k not in recorded or not _same(asked[k], recorded[k])
    )


def _same(a: Any, b: Any) -> bool:
    try:
        return canonical(a) == canonical(b)
    except ValueError:
        return False


# -- validation -----------------------------------------------------------------------------------------------


def _check_bounds(data: Any) -> None:
    """Refuse, before anything else walks it, a cassette nested deeper than MAX_DEPTH or over MAX_BYTES of JSON."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise ValueError(f"the cassette is nested deeper than {MAX_DEPTH} levels; refused")
            stack.extend((v, depth + 1) for v in (value.values() if isinstance(value, dict) else value))
    size = 0
    try:
        for chunk in json.JSONEncoder(allow_nan=False).iterencode(data):
            size += len(chunk)  # ASCII output: characters are bytes
            if size > MAX_BYTES:
                raise ValueError(f"the cassette is over {MAX_BYTES // (1024 * 1024)} MiB of JSON; refused")
    except TypeError as exc:
        raise ValueError(f"the cassette is not JSON data: {exc}") from None
    except ValueError as exc:
        if "refused" in str(exc):
            raise
        raise ValueError(f"the cassette is not JSON data: {exc}") from None


def _validated(data: Any) -> dict[str, Any]:
    """A normalised copy (every key present) of a well-formed cassette; ValueError naming the first bad path."""
    _expect(data, dict, "$")
    if data.get("format") != FORMAT:
        raise ValueError(f"$.format: expected {FORMAT!r}, found {_shown(data.get('format'))}")
    _expect(data.get("servers"), dict, "$.servers")
    servers: dict[str, dict[str, Any]] = {}
    for name, record in data["servers"].items():
        where = f"$.servers[{json.dumps(name)}]"
        if not name:
            raise ValueError(f"{where}: a server needs a name")
        _expect(record, dict, where)
        revision, info, text = record.get("revision"), record.get("serverInfo"), record.get("instructions")
        _expect(revision, (str, type(None)), f"{where}.revision")
        _expect(info, (dict, type(None)), f"{where}.serverInfo")
        _expect(text, (str, type(None)), f"{where}.instructions")
        tools, calls = record.get("tools", []), record.get("calls", [])
        _expect(tools, list, f"{where}.tools")
        for i, tool in enumerate(tools):
            _expect(tool, dict, f"{where}.tools[{i}]")
            _expect(tool.get("name"), str, f"{where}.tools[{i}].name")
        _expect(calls, list, f"{where}.calls")
        checked = []
        for i, call in enumerate(calls):
            at = f"{where}.calls[{i}]"
            _expect(call, dict, at)
            _expect(call.get("tool"), str, f"{at}.tool")
            arguments = {} if call.get("arguments") is None else call["arguments"]
            _expect(arguments, dict, f"{at}.arguments")
            result, error = call.get("result"), call.get("error")
            _expect(result, (dict, type(None)), f"{at}.result")
            _expect(error, (dict, type(None)), f"{at}.error")
            if result is not None and error is not None:
                raise ValueError(f"{at}: has both a result and an error; a call has one answer")
            if error is not None:
                _expect(error.get("code"), int, f"{at}.error.code")
                _expect(error.get("message"), str, f"{at}.error.message")
            try:
                canonical(arguments)
            except ValueError as exc:
                raise ValueError(f"{at}.arguments: not JSON ({exc})") from None
            entry = {"tool": call["tool"], "arguments": arguments, "result": result, "error": error}
            if call.get("notRecorded") is not None:  # why the answer is missing (the recorder says so)
                _expect(call["notRecorded"], str, f"{at}.notRecorded")
                entry["notRecorded"] = call["notRecorded"]
            checked.append(entry)
        servers[name] = {
            "revision": revision,
            "serverInfo": info,
            "instructions": text,
            "tools": tools,
            "calls": checked,
        }
        if record.get("notRecorded") is not None:  # why the server's listing is missing (the recorder says so)
            _expect(record["notRecorded"], str, f"{where}.notRecorded")
            servers[name]["notRecorded"] = record["notRecorded"]
    return json.loads(json.dumps({"format": FORMAT, "servers": servers}))  # a copy the caller cannot change


def _expect(value: Any, kind: type | tuple[type, ...], where: str) -> None:
    if isinstance(value, bool) and kind is int:
        raise ValueError(f"{where}: expected an integer, found {_kind(value)}")
    if not isinstance(value, kind):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wanted = " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)
        raise ValueError(f"{where}: expected {wanted}, found {_kind(value)}")


_KIND_NAMES = {dict: "an object", list: "an array", str: "a string", int: "an integer", type(None): "null"}


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return _KIND_NAMES.get(type(value), f"a {type(value).__name__}")


def _response_to(request: dict, response: Any) -> dict | None:
    """The JSON-RPC response with the request's id among a logged response's messages (JSON body or SSE events)."""
    if not isinstance(response, dict) or not isinstance(response.get("messages"), list):
        return None
    for message in _messages(response["messages"]):
        if message.get("id") == request.get("id") and ("result" in message or "error" in message):
            return message
    return None


def _messages(logged: list) -> Iterator[dict]:
    for item in logged:
        for message in item if isinstance(item, list) else [item]:  # a batch answer is a list
            if isinstance(message, dict):
                yield message


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH}") from None


def _names(names: Any) -> str:
    return ", ".join(repr(n) for n in names) if names else "(none)"


def _shown(value: Any) -> str:
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
