// Stands in for the original's "#channels/discord.js" where its `run` command imports it (see hooks.mjs):
// `startDiscord` registers a "discord" channel handler that records what the agent sends instead of
// connecting to Discord. It is the only piece of the original's startup that the driver replaces.
// Differences from the real one, all because there is no Discord connection:
//   - config/channels/discord.toml is optional (the real one throws without it); its ownerId is used if set;
//   - nothing is fetched from Discord (history, attachments): fetchHistory and downloadAttachments answer empty;
//   - "owner" cannot be resolved to a DM channel (the real one asks Discord to open one), and the agent has no
//     discordClient, so a cron job or heartbeat with target = "owner" finds no session;
//   - a message is recorded whole under one new id (the real one splits text over 2000 characters).

import { pathToFileURL } from "node:url";

const src = process.env["CIREIL_ORIGINAL_SRC"];
if (src === undefined) {
  throw new Error("CIREIL_ORIGINAL_SRC is not set: the driver sets it to the original's packages/runtime/src");
}
const at = (rel: string): string => pathToFileURL(`${src}/${rel}`).href;

const { DiscordSession } = await import(at("harness/session.ts"));
const { loadChannel } = await import(at("config/index.ts"));

interface Sent {
  agent: string;
  session: string;
  content: string;
  attachments?: string[];
  flags?: number;
  messageId: string;
}

interface DriverState {
  sent: Sent[];
  reactions: { agent: string; session: string; emoji: string; messageId?: string }[];
  discordStarted: string[];
  snowflake(): string;
}

const DISCORD_EPOCH = 1_420_070_400_000n;
let lastFlake = 0n;

function snowflake(): string {
  // Discord ids grow with time (ms since 2015 << 22); history ordering in the original relies on that
  let flake = (BigInt(Date.now()) - DISCORD_EPOCH) << 22n;
  if (flake <= lastFlake) {
    flake = lastFlake + 1n;
  }
  lastFlake = flake;
  return flake.toString();
}

const holder = globalThis as { __cireilDriver?: DriverState };
holder.__cireilDriver ??= { discordStarted: [], reactions: [], sent: [], snowflake };
const state: DriverState = holder.__cireilDriver;

interface AgentLike {
  slug: string;
  ownerId?: string;
  registerChannel(channel: string, handler: unknown): void;
}

interface SessionLike {
  id(): string;
  lastSentMessageIds?: string[];
}

export async function startDiscord(owner: { agents: Map<string, AgentLike> }, agentSlug: string): Promise<undefined> {
  const agent = owner.agents.get(agentSlug);
  if (agent === undefined) {
    throw new Error(`the harness has no agent '${agentSlug}'`);
  }

  try {
    const cfg = (await loadChannel("discord", agentSlug)) as { ownerId?: string };
    agent.ownerId = cfg.ownerId;
  } catch {
    // no discord.toml: fine without a connection
  }

  agent.registerChannel("discord", {
    capabilities: {
      supportsAttachments: true,
      supportsDownloadAttachments: true,
      supportsReactions: true,
    },
    downloadAttachments: async (): Promise<{ filename: string; data: Buffer }[]> => [],
    fetchHistory: async (): Promise<never[]> => [],
    react: async (session: SessionLike, emoji: string, messageId?: string): Promise<void> => {
      state.reactions.push({ agent: agentSlug, emoji, messageId, session: session.id() });
    },
    // these errors reach the model as tool results: they are the real channel's, word for word (wire data);
    // "owner" fails as the real one does when Discord cannot open the DM
    resolveChannel: async (spec: string, sessions: Map<string, SessionLike>, ownerUserId?: string) => {
      if (spec === "owner") {
        return { error: ownerUserId === undefined ? "ownerId not configured" : "failed to create DM channel with owner" };
      }
      return sessions.get(spec) ?? { error: `session not found: ${spec}` };
    },
    send: async (session: SessionLike, content: string, attachments?: string[], flags?: number): Promise<void> => {
      if (!(session instanceof DiscordSession)) {
        throw new Error(`the Discord stand-in was asked to send to ${session.id()}, not a Discord session`);
      }
      const messageId = state.snowflake();
      state.sent.push({ agent: agentSlug, attachments, content, flags, messageId, session: session.id() });
      session.lastSentMessageIds = [messageId];
    },
  });
  state.discordStarted.push(agentSlug);
  return undefined;
}
