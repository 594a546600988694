// cireil's host for one plugin of the original CireilClaw (its JS/TS plugin contract, @cireilclaw/sdk).
//
// One Node process per plugin. cireil (Python) starts it as
//     node host.mjs '<json: {kind, root, name, id, fd}>'
// with a pipe on fd `fd` for what this host says; cireil writes to our stdin. Both carry one JSON object a line.
// The plugin's own stdout and stderr are left alone: cireil keeps their tail as the plugin's log, so a
// console.log in a plugin can never break the protocol.
//
//   host -> cireil  {t:"manifest", pluginName, tools:[{name, description, jsonSchema}], extractors:[...]}
//                   {t:"fatal", message, what}                       (load failed; the process exits 1)
//                   {t:"done", id, ok:true, value} | {t:"done", id, ok:false, error:{name,message,hint,stack}}
//                   {t:"cb", id, call, method, args}                  (a host service cireil answers)
//   cireil -> host  {t:"call", id, tool, input, ctx:{agentSlug, session:{channel,id}, mounts}}
//                   {t:"extract", id, path, content}
//                   {t:"cbr", id, ok, value | error}
// Bytes cross as {"$b64": "..."}.
//
// Services done here, in the plugin's process, because Node has them: crypto, ids, net.fetch, createKeyPool.
// Everything touching the agent (files through the sandbox path model, config, state, replies) is asked of
// cireil, which applies the agent's mounts and conditions.

import crypto from "node:crypto";
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";

const init = JSON.parse(process.argv[2] ?? "{}");
const OUT_FD = Number.isInteger(init.fd) ? init.fd : 3;

// -- the wire -------------------------------------------------------------------------------------------
function encode(_key, value) {
  if (value instanceof Uint8Array) {
    return { $b64: Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("base64") };
  }
  if (value instanceof ArrayBuffer) {
    return { $b64: Buffer.from(value).toString("base64") };
  }
  if (typeof value === "bigint") {
    return value.toString();
  }
  return value;
}

function decode(_key, value) {
  if (value !== null && typeof value === "object" && typeof value.$b64 === "string") {
    const keys = Object.keys(value);
    if (keys.length === 1) {
      return new Uint8Array(Buffer.from(value.$b64, "base64"));
    }
  }
  return value;
}

function send(message) {
  const data = Buffer.from(`${JSON.stringify(message, encode)}\n`, "utf8");
  let offset = 0;
  while (offset < data.length) {
    try {
      offset += fs.writeSync(OUT_FD, data, offset);
    } catch (error) {
      if (error?.code === "EAGAIN") {
        continue; // the pipe is full: cireil's reader empties it
      }
      throw error;
    }
  }
}

function fatal(message, what) {
  send({ t: "fatal", message, what });
  process.exit(1);
}

// Node's permission model (cireil starts us under it: jssandbox.py) refuses with a bare "Access to this API has
// been restricted"; say what was refused and what a plugin does instead.
const REFUSED = {
  ChildProcess: "starting the process",
  FileSystemRead: "reading",
  FileSystemWrite: "writing",
  WorkerThreads: "starting a worker thread",
};

function refusal(error) {
  const what = REFUSED[error.permission] ?? `${error.permission ?? "an access"} to`;
  const where = typeof error.resource === "string" && error.resource !== "" ? ` ${error.resource}` : "";
  return {
    hint:
      "In cireil a plugin reads only its own folder and its modules, writes nothing and starts no processes: " +
      "use ctx.fs for the agent's files and ctx.pluginState for the plugin's own data.",
    message: `cireil's plugin sandbox refused ${what}${where} (plugin ${init.id})`,
    name: "ToolError",
    stack: typeof error.stack === "string" ? error.stack : undefined,
  };
}

// A load failure's text: a sandbox refusal said as such (and its hint), anything else with its stack.
function told(error) {
  if (error?.code === "ERR_ACCESS_DENIED") {
    const { hint, message } = refusal(error);
    return `${message}. ${hint}`;
  }
  return error?.stack ?? error;
}

function errorPayload(error) {
  if (error?.code === "ERR_ACCESS_DENIED") {
    return refusal(error);
  }
  if (error instanceof Error || (error !== null && typeof error === "object")) {
    return {
      hint: typeof error.hint === "string" ? error.hint : undefined,
      message: typeof error.message === "string" ? error.message : String(error),
      name: typeof error.name === "string" ? error.name : "Error",
      stack: typeof error.stack === "string" ? error.stack : undefined,
    };
  }
  return { message: String(error), name: "Error" };
}

// -- callbacks answered by cireil -------------------------------------------------------------------------
let nextCallback = 1;
const waiting = new Map();

function ask(call, method, args) {
  const id = nextCallback++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { reject, resolve });
    send({ args, call, id, method, t: "cb" });
  });
}

function answered(message) {
  const entry = waiting.get(message.id);
  if (entry === undefined) {
    return;
  }
  waiting.delete(message.id);
  if (message.ok) {
    entry.resolve(message.value === null ? undefined : message.value);
    return;
  }
  const failure = new Error(message.error?.message ?? "host service failed");
  failure.name = message.error?.name ?? "Error";
  if (typeof message.error?.hint === "string") {
    failure.hint = message.error.hint;
  }
  entry.reject(failure);
}

// -- resolving the plugin as the original's loader does ----------------------------------------------------
function resolveEntry() {
  if (init.kind === "folder") {
    const dir = path.join(init.root, "plugins", init.name);
    const pkg = path.join(dir, "package.json");
    if (!fs.existsSync(pkg)) {
      fatal(`plugin folder ${dir} has no package.json`, `clone the plugin into ${dir}, or fix name = "${init.name}"`);
    }
    if (!fs.existsSync(path.join(dir, "node_modules"))) {
      fatal(`plugin '${init.name}' is missing its dependencies (${dir}/node_modules)`, `run: cd ${dir} && pnpm install`);
    }
    try {
      return { entry: createRequire(pkg).resolve("."), pkg };
    } catch (error) {
      fatal(`plugin '${init.name}': no entry point in ${pkg} (${error.message})`, "fix its package.json main/exports");
    }
  }
  const pkg = path.join(init.root, "package.json");
  try {
    return { entry: createRequire(pkg).resolve(init.name), pkg };
  } catch {
    fatal(
      `plugin package ${init.name} is not installed in ${init.root}/node_modules`,
      `run: cd ${init.root} && pnpm add ${init.name}`,
    );
  }
  return undefined;
}

const TS_ENTRY = /\.(?:c|m)?tsx?$/u;

// Where host-side helpers are looked up: beside the plugin first, then the folders cireil names
// (CIREIL_PLUGIN_MODULES: node_modules folders, e.g. ~/.cache/cireil/node/node_modules).
function resolveNear(entry, specifier) {
  const places = [entry, ...(process.env.CIREIL_PLUGIN_MODULES ?? "").split(path.delimiter).filter(Boolean)];
  for (const place of places) {
    try {
      return createRequire(place === entry ? place : path.join(place, "cireil-anchor.js")).resolve(specifier);
    } catch {
      // not at this place; try the next
    }
  }
  return undefined;
}

// TypeScript, loaded in this thread. The original runs every plugin under tsx: its main, or a dependency of it
// (a workspace SDK), may be TypeScript. tsx cannot run in cireil's sandbox (its hooks run in a worker thread
// and its esbuild in a child process, both refused), so the same is done with Node's own tools: synchronous
// module hooks (module.registerHooks, Node >= 22.15) and its type stripper (module.stripTypeScriptTypes, in
// "transform" mode: enums and namespaces too). `./x.js` that names `./x.ts`, as TypeScript writes it, resolves.
const TS_FILE = /\.(?:c|m)?ts$/u;
const JS_SPECIFIER = /\.(c|m)?js$/u;
const packageTypes = new Map(); // folder -> "module" | "commonjs", of the nearest package.json

function packageType(file) {
  const seen = [];
  let dir = path.dirname(file);
  for (;;) {
    if (packageTypes.has(dir)) {
      break;
    }
    seen.push(dir);
    let found;
    try {
      found = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).type === "module" ? "module" : "commonjs";
    } catch {
      found = undefined; // none here (or not readable): look further up
    }
    const parent = path.dirname(dir);
    if (found !== undefined || parent === dir) {
      packageTypes.set(dir, found ?? "commonjs");
      break;
    }
    dir = parent;
  }
  const type = packageTypes.get(dir);
  for (const folder of seen) {
    packageTypes.set(folder, type);
  }
  return type;
}

function registerTypeScript(module) {
  module.registerHooks({
    load(url, context, nextLoad) {
      if (!url.startsWith("file:") || !TS_FILE.test(url) || url.endsWith(".d.ts")) {
        return nextLoad(url, context);
      }
      const file = fileURLToPath(url);
      const source = module.stripTypeScriptTypes(fs.readFileSync(file, "utf8"), { mode: "transform", sourceUrl: url });
      const format = url.endsWith(".mts") ? "module" : url.endsWith(".cts") ? "commonjs" : packageType(file);
      return { format, shortCircuit: true, source };
    },
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context);
      } catch (error) {
        if (error?.code !== "ERR_MODULE_NOT_FOUND" || !JS_SPECIFIER.test(specifier)) {
          throw error;
        }
        try {
          return nextResolve(specifier.replace(JS_SPECIFIER, ".$1ts"), context);
        } catch {
          throw error; // not TypeScript either: the first error says what is missing
        }
      }
    },
  });
}

async function importTypeScriptLoader(entry) {
  const module = await import("node:module");
  if (typeof module.registerHooks === "function" && typeof module.stripTypeScriptTypes === "function") {
    registerTypeScript(module);
    return;
  }
  if (TS_ENTRY.test(entry)) {
    fatal(
      `plugin entry ${entry} is TypeScript, which cireil's plugin sandbox loads only with Node >= 22.15 (this is ${process.version})`,
      "build the plugin (pnpm build) so its package points at dist/*.mjs, or: npm install --prefix ~/.cache/cireil/node node@22",
    );
  }
}

// -- valibot schema -> JSON Schema, as the original presents plugin tools ----------------------------------
async function schemaConverter(entry) {
  const found = resolveNear(entry, "@valibot/to-json-schema");
  if (found === undefined) {
    return undefined;
  }
  const library = await import(pathToFileURL(found).href);
  return typeof library.toJsonSchema === "function" ? library.toJsonSchema : undefined;
}

// JSON Schema regexes have no flags; the original refuses all but `u`, which JSON Schema implies.
function withoutRegexFlags(value, seen = new Map()) {
  if (value instanceof RegExp) {
    const other = value.flags.replaceAll("u", "");
    if (other !== "") {
      throw new Error(`regex /${value.source}/${value.flags} has flags '${other}', which JSON Schema cannot express`);
    }
    return new RegExp(value.source);
  }
  if (value === null || typeof value !== "object") {
    return value;
  }
  if (seen.has(value)) {
    return seen.get(value);
  }
  if (Array.isArray(value)) {
    const out = [];
    seen.set(value, out);
    for (const item of value) {
      out.push(withoutRegexFlags(item, seen));
    }
    return out;
  }
  const out = {};
  seen.set(value, out);
  for (const [key, item] of Object.entries(value)) {
    out[key] = withoutRegexFlags(item, seen);
  }
  return out;
}

// -- the context a tool is given --------------------------------------------------------------------------
const ED25519_SPKI = Buffer.from("302a300506032b6570032100", "hex");
const X25519_SPKI = Buffer.from("302a300506032b656e032100", "hex");

function bytes(value, name, length) {
  if (!(value instanceof Uint8Array)) {
    throw new TypeError(`${name} must be a byte array`);
  }
  if (length !== undefined && value.length !== length) {
    throw new RangeError(`${name} must be ${length} bytes`);
  }
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

function rawPublic(raw, prefix) {
  return crypto.createPublicKey({ format: "der", key: Buffer.concat([prefix, bytes(raw, "publicKey", 32)]), type: "spki" });
}

function pkcs8(der) {
  return crypto.createPrivateKey({ format: "der", key: bytes(der, "privateKeyPkcs8"), type: "pkcs8" });
}

function keyPair(kind) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync(kind);
  const spki = publicKey.export({ format: "der", type: "spki" });
  return {
    privateKeyPkcs8: new Uint8Array(privateKey.export({ format: "der", type: "pkcs8" })),
    publicKey: new Uint8Array(spki.subarray(spki.length - 32)),
  };
}

// HChaCha20 (draft-irtf-cfrg-xchacha §2.2): derives the subkey that turns ChaCha20-Poly1305 into XChaCha20.
function hchacha20(key, nonce16) {
  const s = new Uint32Array(16);
  s.set([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);
  for (let i = 0; i < 8; i++) {
    s[4 + i] = key.readUInt32LE(i * 4);
  }
  for (let i = 0; i < 4; i++) {
    s[12 + i] = nonce16.readUInt32LE(i * 4);
  }
  const rotl = (v, n) => ((v << n) | (v >>> (32 - n))) >>> 0;
  const quarter = (a, b, c, d) => {
    s[a] = (s[a] + s[b]) >>> 0; s[d] = rotl(s[d] ^ s[a], 16);
    s[c] = (s[c] + s[d]) >>> 0; s[b] = rotl(s[b] ^ s[c], 12);
    s[a] = (s[a] + s[b]) >>> 0; s[d] = rotl(s[d] ^ s[a], 8);
    s[c] = (s[c] + s[d]) >>> 0; s[b] = rotl(s[b] ^ s[c], 7);
  };
  for (let round = 0; round < 10; round++) {
    quarter(0, 4, 8, 12); quarter(1, 5, 9, 13); quarter(2, 6, 10, 14); quarter(3, 7, 11, 15);
    quarter(0, 5, 10, 15); quarter(1, 6, 11, 12); quarter(2, 7, 8, 13); quarter(3, 4, 9, 14);
  }
  const out = Buffer.alloc(32);
  [0, 1, 2, 3, 12, 13, 14, 15].forEach((word, i) => out.writeUInt32LE(s[word], i * 4));
  return out;
}

function xchacha(keyIn, nonceIn, aadIn) {
  const key = bytes(keyIn, "key", 32);
  const nonce = bytes(nonceIn, "nonce", 24);
  const aad = aadIn === undefined ? undefined : bytes(aadIn, "aad");
  const subkey = hchacha20(key, nonce.subarray(0, 16));
  const iv = Buffer.concat([Buffer.alloc(4), nonce.subarray(16)]);
  const cipher = (decrypting) => {
    const made = (decrypting ? crypto.createDecipheriv : crypto.createCipheriv)("chacha20-poly1305", subkey, iv, {
      authTagLength: 16,
    });
    if (aad !== undefined) {
      made.setAAD(aad, { plaintextLength: 0 });
    }
    return made;
  };
  return {
    decrypt: async (data) => {
      const sealed = bytes(data, "ciphertext");
      if (sealed.length < 16) {
        throw new Error("ciphertext is shorter than its 16-byte tag");
      }
      const d = cipher(true);
      d.setAuthTag(sealed.subarray(sealed.length - 16));
      try {
        return new Uint8Array(Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]));
      } catch {
        throw new Error("invalid tag: the ciphertext, key, nonce or aad is wrong");
      }
    },
    encrypt: async (data) => {
      const e = cipher(false);
      const body = Buffer.concat([e.update(bytes(data, "plaintext")), e.final()]);
      return new Uint8Array(Buffer.concat([body, e.getAuthTag()]));
    },
  };
}

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

function ulid() {
  let time = Date.now();
  let head = "";
  for (let i = 0; i < 10; i++) {
    head = CROCKFORD[time % 32] + head;
    time = Math.floor(time / 32);
  }
  const random = crypto.randomBytes(16);
  let tail = "";
  for (let i = 0; i < 16; i++) {
    tail += CROCKFORD[random[i] % 32];
  }
  return head + tail;
}

let sdkPromise;
function sdkOf(entry) {
  // KeyPool comes from the plugin's own SDK copy: one pool manager per plugin process, as in the original.
  sdkPromise ??= (async () => {
    const found = createRequire(entry).resolve("@cireilclaw/sdk");
    return await import(pathToFileURL(found).href);
  })();
  return sdkPromise;
}

function buildContext(call, data, entry, sdk) {
  const cb = (method, ...args) => ask(call, method, args);
  const fireAndForget = (method, ...args) => {
    cb(method, ...args).catch(() => undefined);
  };
  return {
    addImage: (image, mediaType) => fireAndForget("addImage", image, mediaType),
    addToolMessage: (content) => fireAndForget("addToolMessage", content),
    addVideo: (video, mediaType) => fireAndForget("addVideo", video, mediaType),
    agentSlug: data.agentSlug,
    cfg: {
      agentPlugin: async (name) => await cb("cfg.agentPlugin", name),
      globalPlugin: async (name) => await cb("cfg.globalPlugin", name),
    },
    channel: {
      resolveChannel: async (spec) => {
        const resolved = await cb("channel.resolveChannel", spec);
        if (resolved !== null && typeof resolved === "object" && "error" in resolved) {
          return { error: resolved.error };
        }
        return { channel: resolved.channel, id: () => resolved.id };
      },
    },
    createKeyPool: (keys, cooldownMs) => {
      if (sdk?.KeyPoolManager === undefined) {
        throw new Error(
          "createKeyPool: the plugin's @cireilclaw/sdk could not be loaded in cireil's plugin host, so there is no KeyPool",
        );
      }
      return sdk.KeyPoolManager.getPool(keys, cooldownMs);
    },
    crypto: {
      ed25519: {
        generateKeyPair: async () => keyPair("ed25519"),
        sign: async (priv, message) => new Uint8Array(crypto.sign(null, bytes(message, "data"), pkcs8(priv))),
        verify: async (pub, signature, message) =>
          crypto.verify(null, bytes(message, "data"), rawPublic(pub, ED25519_SPKI), bytes(signature, "signature")),
      },
      hkdf: async (ikm, salt, info, length) => {
        if (!Number.isSafeInteger(length) || length < 0) {
          throw new RangeError("length must be a non-negative safe integer");
        }
        return new Uint8Array(crypto.hkdfSync("sha256", bytes(ikm, "ikm"), bytes(salt, "salt"), bytes(info, "info"), length));
      },
      loadNormalizedKey: async (opts) => {
        let raw;
        if (opts !== null && typeof opts === "object" && typeof opts.path === "string") {
          raw = await cb("crypto.loadNormalizedKey.path", opts.path, opts.kind ?? null);
        } else if (opts !== null && typeof opts === "object" && typeof opts.data === "string") {
          raw = opts.data;
        } else {
          throw new TypeError("crypto.loadNormalizedKey requires either `path` or `data`");
        }
        try {
          return { data: crypto.createPrivateKey(raw).export({ format: "pem", type: "pkcs8" }), format: "pkcs8" };
        } catch {
          return { data: crypto.createPublicKey(raw).export({ format: "pem", type: "spki" }), format: "spki" };
        }
      },
      randomBytes: async (length) => {
        if (!Number.isSafeInteger(length) || length < 0) {
          throw new RangeError("length must be a non-negative safe integer");
        }
        return new Uint8Array(crypto.randomBytes(length));
      },
      x25519: {
        derive: async (priv, pub) =>
          new Uint8Array(crypto.diffieHellman({ privateKey: pkcs8(priv), publicKey: rawPublic(pub, X25519_SPKI) })),
        generateKeyPair: async () => keyPair("x25519"),
      },
      xchacha20poly1305: (key, nonce, aad) => xchacha(key, nonce, aad),
    },
    fs: {
      listDir: async (p) => await cb("fs.listDir", p),
      readTextFile: async (p) => await cb("fs.readTextFile", p),
      stat: async (p) => await cb("fs.stat", p),
      writeTextFile: async (p, content) => {
        await cb("fs.writeTextFile", p, content);
      },
    },
    ids: { ulid: async () => ulid() },
    mounts: data.mounts,
    // the original's rule: a plain fetch from the plugin's process (looked up per call, never cached)
    net: { fetch: (...args) => globalThis.fetch(...args) },
    paths: {
      checkConditionalAccess: async (p) => {
        await cb("paths.checkConditionalAccess", p);
      },
      checkWriteAccess: async (p) => {
        await cb("paths.checkWriteAccess", p);
      },
      resolve: async (p) => await cb("paths.resolve", p),
    },
    pluginState: {
      readText: async (name) => await cb("pluginState.readText", name),
      remove: async (name) => {
        await cb("pluginState.remove", name);
      },
      writeText: async (name, content) => {
        await cb("pluginState.writeText", name, content);
      },
    },
    reply: {
      react: async (emoji, messageId) => {
        await cb("reply.react", emoji, messageId);
      },
      send: async (content, attachments) => {
        await cb("reply.send", content, attachments);
      },
    },
    session: { channel: data.session.channel, id: () => data.session.id },
  };
}

// -- main ---------------------------------------------------------------------------------------------------
async function main() {
  const { entry } = resolveEntry();
  await importTypeScriptLoader(entry);
  let mod;
  try {
    mod = await import(pathToFileURL(entry).href);
  } catch (error) {
    fatal(`plugin ${init.id} failed to import ${entry}: ${told(error)}`, "fix the plugin's code or reinstall it");
  }
  if (typeof mod?.default !== "function") {
    fatal(`plugin ${init.id}: ${entry} has no default export function (definePlugin(...))`, "export default definePlugin(() => ({...}))");
  }
  let plugin;
  try {
    plugin = await mod.default();
  } catch (error) {
    fatal(`plugin ${init.id}: its factory threw: ${told(error)}`, "fix the plugin's factory");
  }
  if (plugin === null || typeof plugin !== "object" || typeof plugin.name !== "string" || plugin.name === "") {
    fatal(`plugin ${init.id}: its factory must return an object with a non-empty string 'name'`, "fix the plugin's factory");
  }
  const tools = plugin.tools ?? {};
  if (typeof tools !== "object" || tools === null) {
    fatal(`plugin ${init.id}: 'tools' must be an object of tool definitions`, "fix the plugin's factory");
  }
  const toJsonSchema = await schemaConverter(entry);
  if (toJsonSchema === undefined) {
    fatal(
      `plugin ${init.id}: @valibot/to-json-schema (which turns its parameter schemas into JSON Schema, as the original does) is not installed`,
      "run: npm install --prefix ~/.cache/cireil/node @valibot/to-json-schema@^1.7 (cireil looks there), or add it to the runtime root",
    );
  }
  const manifestTools = [];
  for (const [name, def] of Object.entries(tools)) {
    let jsonSchema;
    try {
      jsonSchema = toJsonSchema(withoutRegexFlags(def.parameters), { target: "openapi-3.0", typeMode: "input" });
    } catch (error) {
      fatal(`plugin ${init.id}: tool '${name}': its parameters cannot be turned into JSON Schema: ${error.message}`, "fix the tool's schema");
    }
    manifestTools.push({ description: def.description, jsonSchema, name });
  }
  let sdk;
  try {
    sdk = await sdkOf(entry);
  } catch {
    sdk = undefined; // only createKeyPool needs it; it says so when called
  }
  const extractors = [...(plugin.extractors ?? [])];

  const input = readline.createInterface({ input: process.stdin, terminal: false });
  input.on("line", (line) => {
    let message;
    try {
      message = JSON.parse(line, decode);
    } catch {
      return;
    }
    if (message.t === "cbr") {
      answered(message);
    } else if (message.t === "call") {
      void invoke(message);
    } else if (message.t === "extract") {
      void extract(message);
    }
  });
  input.on("close", () => process.exit(0)); // cireil went away: so do we

  async function invoke(message) {
    const def = tools[message.tool];
    try {
      if (def === undefined) {
        throw new Error(`plugin ${plugin.name} has no tool ${message.tool}`);
      }
      const result = await def.execute(message.input, buildContext(message.id, message.ctx, entry, sdk));
      if (result === null || typeof result !== "object" || Array.isArray(result) || typeof result.success !== "boolean") {
        throw new TypeError("Plugin tool must return an object with a boolean success field");
      }
      send({ id: message.id, ok: true, t: "done", value: result });
    } catch (error) {
      send({ error: errorPayload(error), id: message.id, ok: false, t: "done" });
    }
  }

  async function extract(message) {
    const fileName = message.path.split("/").pop() ?? message.path;
    const sorted = extractors.toSorted((a, b) => (b.priority ?? 0) - (a.priority ?? 0));
    try {
      for (const extractor of sorted) {
        if (path.matchesGlob(fileName, extractor.glob)) {
          send({ id: message.id, ok: true, t: "done", value: await extractor.extract(message.path, message.content) });
          return;
        }
      }
      send({ id: message.id, ok: true, t: "done", value: [] });
    } catch (error) {
      send({ error: errorPayload(error), id: message.id, ok: false, t: "done" });
    }
  }

  send({
    extractors: extractors.map((e) => ({ glob: e.glob, priority: e.priority ?? 0 })),
    pluginName: plugin.name,
    t: "manifest",
    tools: manifestTools,
  });
}

main().catch((error) => fatal(`plugin ${init.id}: ${told(error)}`, "see the plugin's log"));
