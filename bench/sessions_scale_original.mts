// bench/sessions_scale.py's stand-in for the original CireilClaw: times the original's own session functions
// on a sessions.db, in its own process. Our code (not the original's): it imports the original's modules and
// calls them as its `run` would, nothing more. Started by sessions_scale.py as
//     node --expose-gc --import <runtime>/node_modules/tsx/dist/loader.mjs sessions_scale_original.mts
// with the working directory <checkout>/packages/runtime, $HOME pointing at a home whose
// .cireilclaw/agents/<slug>/sessions.db is the database to time (a copy: ops write to it), and
// $CIREIL_BENCH_CONFIG = {"src": "<runtime>/src", "slug": "<slug>"}.
//
// stdout carries only the protocol, one JSON object per line; the original's log goes to stderr.
// After {"ready":true} it answers one op per stdin line, in order, each with {"ok":true,"ms":...} or
// {"ok":false,"error":...}; "ms" is the time of the original's own call only (performance.now around it),
// after a full garbage collection outside the clock, so that no op pays for the garbage of the one before:
//   {"op":"load","keep":ID}       loadSessions(slug), as `run` does at start; the sessions stay in memory
//                                 until the next load, as they do in `run`; session ID is the one "save" saves
//   {"op":"save"}                 one turn (user, respond call, its response) appended to the kept session in
//                                 memory, then saveSession + flushAllSessions: the whole row written now
//   {"op":"tool","name":N,"input":{...}}  a built-in tool's execute (read-session, list-sessions,
//                                 query-sessions) with the context it reads: the agent's database
// Closing stdin ends the process.

import { describe, emit, type Op, serveOps } from "../tests/peer/driver/protocol.mts";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";

interface BenchConfig {
  src: string;
  slug: string;
}

async function main(): Promise<void> {
  const raw = process.env["CIREIL_BENCH_CONFIG"];
  if (raw === undefined) {
    throw new Error("CIREIL_BENCH_CONFIG is not set");
  }
  const cfg = JSON.parse(raw) as BenchConfig;
  const at = (rel: string): string => pathToFileURL(path.join(cfg.src, rel)).href;

  const { initDb, getDb } = await import(at("db/index.ts"));
  const { loadSessions, saveSession, flushAllSessions } = await import(at("db/sessions.ts"));
  const tools: Record<string, { execute(input: unknown, ctx: unknown): Promise<Record<string, unknown>> }> = {
    "list-sessions": (await import(at("engine/tools/list-sessions.ts"))).listSessions,
    "query-sessions": (await import(at("engine/tools/query-sessions.ts"))).querySessions,
    "read-session": (await import(at("engine/tools/read-session.ts"))).readSession,
  };

  initDb(cfg.slug); // opens sessions.db and runs drizzle's migrator: a no-op on a database in its format
  // the original's sessions and the Session "save" saves, held between ops; typed where they live, not here
  let loaded: Map<string, any> | undefined = undefined;
  let kept: any = undefined;
  let turns = 0;
  const collect = (globalThis as { gc?: () => void }).gc;
  if (collect === undefined) {
    throw new Error("start node with --expose-gc: each op is timed after a full collection");
  }

  async function handle(op: Op): Promise<Record<string, unknown>> {
    switch (op.op) {
      case "load": {
        loaded = undefined; // the previous load's sessions are garbage before this one starts, collected below
        kept = undefined;
        collect();
        const started = performance.now();
        const sessions = await loadSessions(cfg.slug);
        const ms = performance.now() - started;
        loaded = sessions;
        kept = sessions.get(String(op["keep"]));
        let messages = 0;
        for (const session of sessions.values()) {
          messages += session.history.length;
        }
        return { kept: kept?.history.length ?? null, messages, ms, sessions: sessions.size };
      }
      case "save": {
        if (kept === undefined) {
          throw new Error("no session kept: send a load with keep = <a session id of the database> first");
        }
        turns += 1;
        const now = Date.now();
        const call = `call_bench${String(turns).padStart(8, "0")}`;
        kept.history.push(
          { content: { content: `bench turn ${turns}`, type: "text" }, role: "user", timestamp: now },
          {
            content: { id: call, input: { content: "Done." }, name: "respond", type: "toolCall" },
            role: "assistant",
            timestamp: now + 1,
          },
          {
            content: { id: call, name: "respond", output: { final: true, sent: true }, type: "toolResponse" },
            role: "toolResponse",
            timestamp: now + 2,
          },
        );
        collect();
        const started = performance.now();
        saveSession(cfg.slug, kept);
        flushAllSessions();
        return { messages: kept.history.length, ms: performance.now() - started };
      }
      case "tool": {
        const tool = tools[String(op["name"])];
        if (tool === undefined) {
          throw new Error(`no tool ${JSON.stringify(op["name"])} here (${Object.keys(tools).join(", ")})`);
        }
        const ctx = { db: getDb(cfg.slug), session: kept };
        collect();
        const started = performance.now();
        const result = await tool.execute(op["input"] ?? {}, ctx);
        const ms = performance.now() - started;
        const sizes = Object.fromEntries(
          Object.entries(result).map(([key, value]) => [key, Array.isArray(value) ? value.length : value]),
        );
        return { ms, result: sizes };
      }
      default:
        throw new Error(`unknown op ${JSON.stringify(op.op)} (load, save, tool)`);
    }
  }

  emit({ ready: true });
  serveOps(handle, () => process.exit(0));
}

try {
  await main();
} catch (error) {
  emit({ error: describe(error), ok: false, ready: false });
  process.exit(1);
}
