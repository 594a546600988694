// cireil's test driver for the original CireilClaw: runs the original's own code (its `init`, its `run`
// startup, its scheduler, harness, engine and session store) without Discord or a terminal, controlled
// by JSON lines. Started by tests/originalkit.py as
//     node --import <checkout>/packages/runtime/node_modules/tsx/dist/loader.mjs driver.mts init|serve
// with the working directory <checkout>/packages/runtime (its tsconfig) and $HOME pointing at the test's
// home (the original's root is realpath($HOME)/.cireilclaw). Settings come in $CIREIL_DRIVER_CONFIG (JSON).
//
// stdout carries only the protocol: one JSON object per line. Whatever the original prints (its log
// goes through console.*) is sent to stderr.
//
// init:  runs the original's `init` command with its questions answered from the config; prints
//        {"ok":true,"agent":"<agent dir>","asked":[...]} (or ok:false with the error) and exits.
// serve: runs the original's `run` command (only its Discord channel replaced, see discord-stub.mts),
//        prints {"ready":true,"agents":[...]} once sessions are loaded and the schedulers run, then
//        answers one op per stdin line, in order, each with {"ok":true,...} or {"ok":false,"error":...}:
//          {"op":"turn","session":ID,"text":T}   a user turn (discord:... as a Discord message is handled,
//                                                anything else as a cron job with execution = "main")
//          {"op":"cron","job":ID}                 runCronJob on that job of config/cron.toml, now
//          {"op":"heartbeat"}                     runHeartbeat with config/heartbeat.toml, now
//          {"op":"flush"}                         flushAllSessions(): pending debounced saves run now
//          {"op":"sessions"}                      the in-memory sessions
//          {"op":"history","session":ID}          one in-memory history (image bytes replaced by their size)
//        Any op may name "agent" (default: the config's slug, else the only agent). SIGINT/SIGTERM stop it
//        through the original's own shutdown hooks (flushAllSessions, scheduler stop); so does stdin closing.

import { describe, emit, type Op, serveOps } from "./protocol.mts";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { register } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";

interface DriverConfig {
  src: string;
  slug?: string;
  answers?: Record<string, unknown>;
  logLevel?: "error" | "warning" | "info" | "debug";
  init?: {
    name: string;
    description?: string;
    preset?: "minimal" | "standard" | "full";
    binaries?: string[];
    apiBase?: string;
    kind?: string;
    model?: string;
    apiKey?: string;
    discord?: { token: string; ownerId: string };
  };
}

const rawConfig = process.env["CIREIL_DRIVER_CONFIG"];
if (rawConfig === undefined) {
  emit({ error: "CIREIL_DRIVER_CONFIG is not set", ok: false, ready: false });
  process.exit(2);
}
const cfg = JSON.parse(rawConfig) as DriverConfig;
process.env["CIREIL_ORIGINAL_SRC"] = cfg.src;
const at = (rel: string): string => pathToFileURL(path.join(cfg.src, rel)).href;

const here = path.dirname(new URL(import.meta.url).pathname);
register(pathToFileURL(path.join(here, "hooks.mjs")).href, {
  data: {
    discordUrl: pathToFileURL(path.join(here, "discord-stub.mts")).href,
    promptsUrl: pathToFileURL(path.join(here, "prompts.mts")).href,
  },
});

const prompts = ((globalThis as { __cireilPrompts?: unknown }).__cireilPrompts = {
  answers: { ...cfg.answers },
  asked: [] as unknown[],
});

// -- init ------------------------------------------------------------------------------------------
async function probeServer(): Promise<{ url: string; close(): void }> {
  // init asks the model server whether it honours tool_choice "required"; this one says yes
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const body = {
        choices: [
          {
            finish_reason: "tool_calls",
            index: 0,
            message: {
              content: null,
              role: "assistant",
              tool_calls: [{ function: { arguments: "{}", name: "ping" }, id: "call_probe", type: "function" }],
            },
          },
        ],
        created: Math.floor(Date.now() / 1000),
        id: "chatcmpl-probe",
        model: "probe",
        object: "chat.completion",
      };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => {
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return { close: () => server.close(), url: `http://127.0.0.1:${port}/v1` };
}

async function runInit(): Promise<void> {
  const spec = cfg.init;
  if (spec === undefined) {
    throw new Error("init needs the 'init' settings (name, preset, ...)");
  }
  const probe = spec.apiBase === undefined ? await probeServer() : undefined;
  try {
    const preset = spec.preset ?? "standard";
    Object.assign(prompts.answers, {
      "API base URL:": spec.apiBase ?? probe?.url,
      "API Kind": spec.kind ?? "openai",
      "API key (leave blank if not needed):": spec.apiKey ?? "",
      "Agent name:": spec.name,
      "Channel:": spec.discord === undefined ? "none" : "discord",
      "Continue with setup?": true,
      "Model:": spec.model ?? "scripted-1",
      "Overwrite?": false,
      "Short description (optional):": spec.description ?? "",
      "Tool preset:": preset,
      ...(preset === "full"
        ? { "Bubblewrap binaries whitelist (comma-separated, leave blank for none):": (spec.binaries ?? []).join(",") }
        : {}),
      ...(spec.discord === undefined
        ? {}
        : {
            "Discord bot token:": spec.discord.token,
            "Discord owner ID (your user ID):": spec.discord.ownerId,
          }),
      ...cfg.answers,
    });
    const { initCommand } = await import(at("cli/init-command.ts"));
    const func = await initCommand.loader();
    await func.call({ process }, {});
    const { toSlug } = await import(at("util/string.ts"));
    const { agentRoot } = await import(at("util/paths.ts"));
    emit({ agent: agentRoot(toSlug(spec.name)), asked: prompts.asked, ok: true });
  } finally {
    probe?.close();
  }
}

// -- serve -----------------------------------------------------------------------------------------
interface DriverState {
  sent: { agent: string; session: string; content: string }[];
  reactions: unknown[];
  discordStarted: string[];
  snowflake(): string;
}

async function runServe(): Promise<void> {
  const { runCommand } = await import(at("cli/run-command.ts"));
  const func = await runCommand.loader();
  await func.call({ process }, { logLevel: cfg.logLevel ?? "debug" });

  // the same module instances the original's run used (same file URLs), so the same singletons
  const { Harness } = await import(at("harness/index.ts"));
  const { flushAllSessions, saveSession } = await import(at("db/sessions.ts"));
  const { runCronJob } = await import(at("scheduler/cron.ts"));
  const { runHeartbeat } = await import(at("scheduler/heartbeat.ts"));
  const { loadCron, loadHeartbeat, loadEngine, loadChannel } = await import(at("config/index.ts"));
  const { DiscordSession } = await import(at("harness/session.ts"));
  const { formatUserMessage } = await import(at("channels/discord.ts"));
  const { getDefaultProviderAndModel } = await import(at("util/default-provider-and-model.ts"));

  const harness = Harness.get();
  const state = (globalThis as { __cireilDriver?: DriverState }).__cireilDriver;
  if (state === undefined) {
    throw new Error("the Discord stand-in was not used: did the original's run-command import change?");
  }

  // the original's Agent and Session classes, loaded at run time: typed where they live, not here
  type Agent = any;
  type Session = any;

  function agentFor(op: Op): Agent {
    const wanted = (op["agent"] as string | undefined) ?? cfg.slug;
    if (wanted === undefined) {
      if (harness.agents.size !== 1) {
        throw new Error(`name the agent: the root has ${harness.agents.size} (${[...harness.agents.keys()].join(", ")})`);
      }
      return harness.agents.values().next().value;
    }
    const agent = harness.agents.get(wanted);
    if (agent === undefined) {
      throw new Error(`no agent '${wanted}' in the root (it has: ${[...harness.agents.keys()].join(", ")})`);
    }
    return agent;
  }

  function sentSince(mark: number): unknown[] {
    return state!.sent.slice(mark);
  }

  // A cron job with execution = "main" runs its prompt this way (scheduler/cron.ts, runMainSession); it is
  // how the original runs a user turn in an internal or tui session and stores it.
  async function mainTurn(agent: Agent, op: Op): Promise<Record<string, unknown>> {
    const sessionId = String(op["session"]);
    const session: Session = await agent.resolveTarget(sessionId);
    if (session === undefined) {
      throw new Error(`the original resolves no session for '${sessionId}'`);
    }
    if (session.busy) {
      throw new Error(`session ${session.id()} is busy`);
    }
    session.busy = true;
    const before = session.history.length;
    session.history.push({
      content: { content: String(op["text"]), type: "text" },
      role: "user",
      timestamp: Date.now(),
    });
    let failure: unknown = undefined;
    try {
      await agent.runScheduledTurn(session, {
        model: op["model"] as string | undefined,
        provider: op["provider"] as string | undefined,
      });
    } catch (error) {
      session.history.length = before;
      failure = error;
    } finally {
      session.busy = false;
      saveSession(agent.slug, session);
    }
    if (failure !== undefined) {
      throw failure;
    }
    return { history: session.history.length, session: session.id() };
  }

  // What the original's Discord channel does with a message that reaches the agent (channels/discord.ts,
  // handleMessageCreate, from the session lookup on), minus what needs Discord itself: fetching history,
  // reply trees, attachments, typing indicators, the warning message on failure.
  async function discordTurn(agent: Agent, op: Op): Promise<Record<string, unknown>> {
    const sessionId = String(op["session"]);
    const [channelId, guildId] = sessionId.slice("discord:".length).split("|");
    if (channelId === undefined || channelId.length === 0) {
      throw new Error(`not a Discord session id: '${sessionId}' (discord:<channel>[|<guild>])`);
    }
    let session: Session = agent.sessions.get(sessionId);
    if (session !== undefined && !(session instanceof DiscordSession)) {
      throw new TypeError(`session ${sessionId} is held as a ${session.channel} session, not a Discord one`);
    }
    const defaults = getDefaultProviderAndModel(await loadEngine(agent.slug));
    if (session === undefined) {
      session = new DiscordSession({ channelId, guildId, isNsfw: false });
      agent.sessions.set(sessionId, session);
    }
    for (let waited = 0; session.busy && waited < 5000; waited += 500) {
      await new Promise((resolve) => {
        setTimeout(resolve, 500);
      });
    }
    if (session.busy) {
      throw new Error(`session ${sessionId} is still busy after 5 s: the original ignores the message`);
    }

    let ownerId: string | undefined = undefined;
    try {
      ownerId = ((await loadChannel("discord", agent.slug)) as { ownerId?: string }).ownerId;
    } catch {
      // no discord.toml
    }
    const author = (op["author"] as { id?: string; username?: string; displayName?: string } | undefined) ?? {};
    const messageId = state!.snowflake();
    const createdAt = new Date();
    const message = {
      attachments: new Map(),
      author: {
        globalName: author.displayName ?? null,
        id: author.id ?? ownerId ?? "100000000000000001",
        username: author.username ?? "tester",
      },
      channelID: channelId,
      client: { application: { id: "100000000000000042" }, guilds: new Map() },
      content: String(op["text"]),
      createdAt,
      guildID: guildId ?? null,
      id: messageId,
      // a guild member with a nickname, so the original does not ask Discord for one
      member: guildId === undefined ? undefined : { nick: author.displayName ?? author.username ?? "tester" },
      stickerItems: undefined,
    };

    session.lastActivity = Date.now();
    session.lastMessageId = messageId;
    session.busy = true;
    let failure: unknown = undefined;
    try {
      const textContent = await formatUserMessage(message, { isMentioned: Boolean(op["mention"]) });
      const provider = (await loadEngine(agent.slug))[session.selectedProvider ?? defaults.provider.name];
      if (provider === undefined) {
        throw new Error(`config/engine.toml has no provider '${String(session.selectedProvider)}' for this session`);
      }
      const before = session.history.length;
      session.history.push({
        content: textContent,
        id: messageId,
        persist: true,
        role: "user",
        timestamp: createdAt.getTime(),
      });
      try {
        await agent.runTurn(session);
      } catch (error) {
        session.history.length = before;
        session.pendingToolMessages.length = 0;
        session.pendingVideos.length = 0;
        failure = error;
      }
    } finally {
      saveSession(agent.slug, session);
      session.busy = false;
    }
    if (failure !== undefined) {
      throw failure;
    }
    return { history: session.history.length, messageId, session: sessionId };
  }

  function sessionsOf(agent: Agent): unknown[] {
    return [...agent.sessions.entries()].map(([key, session]: [string, Session]) => ({
      busy: session.busy,
      channel: session.channel,
      history: session.history.length,
      historyCursor: session.historyCursor,
      id: session.id(),
      key,
      lastActivity: session.lastActivity,
    }));
  }

  function plainHistory(session: Session): unknown {
    // picture bytes as their size, the provider's cached encoding as its kind: the rest as the original holds it
    return JSON.parse(
      JSON.stringify(session.history, (key, value) => {
        if (value !== null && typeof value === "object" && value.type === "Buffer" && Array.isArray(value.data)) {
          return { bytes: value.data.length }; // a Buffer, after its toJSON
        }
        if (value instanceof Uint8Array) {
          return { bytes: value.byteLength };
        }
        if (key === "memoized" && value !== null && typeof value === "object") {
          return { kind: value.kind };
        }
        return value;
      }),
    );
  }

  async function handle(op: Op): Promise<Record<string, unknown>> {
    const mark = state!.sent.length;
    switch (op.op) {
      case "turn": {
        const agent = agentFor(op);
        const sessionId = String(op["session"] ?? "");
        const result = sessionId.startsWith("discord:") ? await discordTurn(agent, op) : await mainTurn(agent, op);
        return { ...result, sent: sentSince(mark) };
      }
      case "cron": {
        const agent = agentFor(op);
        const jobs = (await loadCron(agent.slug)).jobs as { id: string }[];
        const job = jobs.find((it) => it.id === op["job"]);
        if (job === undefined) {
          throw new Error(
            `no job '${String(op["job"])}' in config/cron.toml (it has: ${jobs.map((it) => it.id).join(", ") || "none"})`,
          );
        }
        const ran = await runCronJob(agent, job);
        return { ran, sent: sentSince(mark) };
      }
      case "heartbeat": {
        const agent = agentFor(op);
        await runHeartbeat(agent, await loadHeartbeat(agent.slug));
        return { sent: sentSince(mark) };
      }
      case "flush": {
        flushAllSessions();
        return {};
      }
      case "sessions": {
        return { sessions: sessionsOf(agentFor(op)) };
      }
      case "history": {
        const session = agentFor(op).sessions.get(String(op["session"]));
        if (session === undefined) {
          throw new Error(`no session '${String(op["session"])}' in the original's memory`);
        }
        return { history: plainHistory(session), historyCursor: session.historyCursor };
      }
      default:
        throw new Error(`unknown op ${JSON.stringify(op.op)} (turn, cron, heartbeat, flush, sessions, history)`);
    }
  }

  emit({ agents: [...harness.agents.keys()], asked: prompts.asked, discord: state.discordStarted, ready: true });

  serveOps(
    handle,
    () => {
      // whoever drives this went away: stop as on Ctrl-C, through the original's shutdown hooks
      process.kill(process.pid, "SIGINT");
    },
    true,
  );
}

const mode = process.argv[2];
try {
  if (mode === "init") {
    await runInit();
    process.exit(0);
  } else if (mode === "serve") {
    await runServe();
  } else {
    throw new Error(`mode must be init or serve, not ${JSON.stringify(mode)}`);
  }
} catch (error) {
  emit({ error: describe(error), ok: false, ready: false, stack: error instanceof Error ? error.stack : undefined });
  process.exit(1);
}
