// cireil's extraction of the original CireilClaw's tool definitions, as its own provider code sends them
// (tests/peer/test_tool_definitions.py). Started as
//     node --import <checkout>/packages/runtime/node_modules/tsx/dist/loader.mjs tool_definitions.mts OUT
// with the working directory <checkout>/packages/runtime and $HOME a scratch folder (the Codex provider
// reads its OAuth file from the original's root there). Settings come in $CIREIL_DRIVER_CONFIG (JSON):
//     {"src": "<checkout>/packages/runtime/src", "configs": {"<label>": {"disabled": ["edit", ...]}, ...}}
//
// For each config, a tools.toml enabling every tool of the original's registry but the disabled ones (exec
// as a table, the only enabled form it takes), in registry order: the original's buildTools() makes the tool
// list a turn would get (with its own description decorations), then each provider's own generate() sends a
// request to a local server that records the body and answers 400 (the request is all we want). OUT gets
//     {"registry": [names], "configs": {"<label>": {"openai": [...], "anthropic": [...], "codex": [...]}}}
// Whatever the original logs goes to stderr; only OUT carries the result.

import { Buffer } from "node:buffer";
import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { pathToFileURL } from "node:url";

interface Config {
  src: string;
  configs: Record<string, { disabled?: string[] }>;
}

process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;

const out = process.argv[2];
if (out === undefined) {
  throw new Error("usage: tool_definitions.mts OUT");
}
const config = JSON.parse(process.env["CIREIL_DRIVER_CONFIG"] ?? "{}") as Config;
const load = (relative: string): Promise<Record<string, any>> =>
  import(pathToFileURL(path.join(config.src, relative)).href);

const { buildTools } = await load("engine/tools.ts");
const { builtinToolRegistry } = await load("engine/tools/index.ts");
const oai = await load("engine/provider/oai.ts");
const anthropic = await load("engine/provider/anthropic.ts");
const codex = await load("engine/provider/openai-codex.ts");
const { KeyPool } = await import(
  pathToFileURL(path.join(config.src, "..", "node_modules", "@cireilclaw", "sdk", "src", "index.ts")).href
);

// The Codex provider wants an OAuth login whose token names a ChatGPT account: a made-up one, never sent
// anywhere but the local server below.
const root = path.join(process.env["HOME"] ?? "", ".cireilclaw");
const claims = { "https://api.openai.com/auth": { chatgpt_account_id: "peer-account" } };
const token = ["e30", Buffer.from(JSON.stringify(claims)).toString("base64url"), "sig"].join(".");
mkdirSync(path.join(root, "config", "openai-codex"), { recursive: true });
writeFileSync(
  path.join(root, "config", "openai-codex", "default.json"),
  JSON.stringify({ accessToken: token, expiresAt: Date.now() + 3_600_000, refreshToken: "peer" }),
);

let last = "";
const server = http.createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    last = Buffer.concat(chunks).toString("utf8");
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "recorded", type: "invalid_request_error" } }));
  });
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

async function sent(call: () => Promise<unknown>): Promise<unknown[]> {
  last = "";
  try {
    await call();
  } catch {
    // the 400 answer: expected, the request body is recorded
  }
  if (last === "") {
    throw new Error("the provider sent no request");
  }
  return (JSON.parse(last) as { tools: unknown[] }).tools;
}

const registry = Object.keys(builtinToolRegistry as Record<string, unknown>);
const result: Record<string, Record<string, unknown[]>> = {};
for (const [label, { disabled = [] }] of Object.entries(config.configs)) {
  const tools: Record<string, unknown> = {};
  for (const name of registry) {
    const on = !disabled.includes(name);
    tools[name] = name === "exec" ? { enabled: on } : on;
  }
  const context = {
    messages: [{ content: { content: "hi", type: "text" }, role: "user" }],
    sessionId: "peer",
    systemPrompt: "peer",
    tools: await buildTools("peer", {}, tools),
  };
  result[label] = {
    anthropic: await sent(() => anthropic.generate(context, `${base}/v1`, new KeyPool("k"), "m", { reasoning: false })),
    codex: await sent(() => codex.generate(context, base, "gpt-5.1-codex", {})),
    openai: await sent(() => oai.generate(context, `${base}/v1`, new KeyPool("k"), "m", {})),
  };
}
server.close();
writeFileSync(out, JSON.stringify({ configs: result, registry }));
process.exit(0);
