"""The original CireilClaw's JS plugins run in cireil: loaded as its loader resolves them, one Node worker each,
their tools called like any tool, their config, state and host services, and every way a plugin misbehaves."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

import cireil
from cireil.runtime.base.loop import RuntimeLoop
from cireil.runtime.plugins import jsplugins, node
from cireil.runtime.plugins.jsstate import folder_slug

pytest_plugins = ("jskit",)  # fixtures: js (Node 22 and the original's checkout), original_install

ECHO_SCHEMA = """\
const Echo = vb.strictObject({ text: vb.pipe(vb.string(), vb.nonEmpty(), vb.description("What to echo")) });
"""
ECHO = """\
"echo": {
  description: "Echo what it is given, with who asks.",
  parameters: Echo,
  async execute(input, ctx) {
    const { text } = vb.parse(Echo, input);
    return { success: true, text, agent: ctx.agentSlug, session: ctx.session.id(),
             channel: ctx.session.channel };
  },
},
"""


def test_a_local_js_plugin_is_a_tool_with_its_declared_schema(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "echoer"\n', "echo = true\nlist-dir = true\n")
    js.plugin(agent, "echoer", ECHO, name="echo-plugin", prelude=ECHO_SCHEMA)
    loaded = cireil.load(agent)
    assert loaded.warnings == []
    tool = loaded.tool("echo")
    assert tool.origin == "plugin:echo-plugin"  # its declared name, as a Python plugin's
    assert tool.description == "Echo what it is given, with who asks."
    assert tool.parameters == {
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1, "description": "What to echo"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    result = loaded.call("echo", text="hi")
    assert result.data == {
        "success": True,
        "text": "hi",
        "agent": "a",
        "session": result.data["session"],
        "channel": "internal",
    }
    # the plugin validates its input itself (the original does not pre-validate): its valibot error comes back
    bad = loaded.call("echo", text="")
    assert not bad.success and "Invalid length" in bad["error"]


# -- plugin-github, the original's own reference plugin, against a fake GitHub on 127.0.0.1 --------------------
class FakeGitHub:
    """Answers the two things plugin-github asks: an installation token, then the API call."""

    def __init__(self) -> None:
        import http.server
        import threading

        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _reply(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self):
                seen.append(("POST", self.path, self.headers.get("Authorization", "")))
                self._reply(201, {"token": "ghs_fake", "expires_at": "2999-01-01T00:00:00Z"})

            def do_GET(self):
                seen.append(("GET", self.path, self.headers.get("Authorization", "")))
                if self.path == "/repos/octo/demo/issues/7":
                    issue = {
                        "number": 7,
                        "title": "It broke",
                        "state": "open",
                        "body": "details",
                        "comments": 2,
                        "created_at": "2026-01-01T00:00:00Z",
                        "updated_at": "2026-01-02T00:00:00Z",
                        "html_url": "https://github.com/octo/demo/issues/7",
                        "labels": [{"name": "bug"}],
                        "assignees": [{"login": "robin"}],
                        "user": {"login": "sam"},
                    }
                    self._reply(200, issue)
                else:
                    self._reply(404, {"message": "Not Found"})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def github_api(tmp_path, monkeypatch):
    """A fake GitHub; the plugin's fetches of https://api.github.com are sent there by a preload (NODE_OPTIONS),
    so the plugin's code runs unchanged."""
    fake = FakeGitHub()
    # the worker reads only its plugin's and module folders (jssandbox.py): the preload goes in one of those
    folder = tmp_path / "preload"
    folder.mkdir()
    monkeypatch.setenv("CIREIL_PLUGIN_MODULES", os.pathsep.join([os.environ["CIREIL_PLUGIN_MODULES"], str(folder)]))
    preload = folder / "redirect.mjs"
    preload.write_text(
        "const real = globalThis.fetch;\n"
        "globalThis.fetch = (url, init) => real(String(url instanceof Request ? url.url : url)"
        f".replace('https://api.github.com', {json.dumps(fake.origin)}), init);\n"
    )
    monkeypatch.setenv("NODE_OPTIONS", f"--import={preload.as_uri()}")
    yield fake
    fake.close()


def _github_config(agent, js) -> None:
    import subprocess

    pem = subprocess.run(
        [
            str(js.node),
            "-e",
            "process.stdout.write(require('crypto').generateKeyPairSync('rsa',{modulusLength:2048})"
            ".privateKey.export({type:'pkcs1',format:'pem'}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    config = agent.parents[1] / "config" / "plugins"
    config.mkdir(parents=True)
    (config / "github.toml").write_text(f'appId = "123"\ninstallationId = 42\nprivateKey = """{pem}"""\n')


GITHUB_TOOLS = "github-read-issue = true\ngithub-list-issues = true\nlist-dir = true\n"


@pytest.mark.parametrize("how", ["folder", "package"])
def test_plugin_github_lists_its_tools_and_reads_an_issue(js, tmp_path, github_api, how):
    if how == "folder":  # <root>/plugins/github/, as a git clone with pnpm install
        agent = js.root(tmp_path, '[[plugins]]\nname = "github"\n', GITHUB_TOOLS)
        (agent.parents[1] / "plugins").mkdir()
        (agent.parents[1] / "plugins" / "github").symlink_to(js.github)
    else:  # `pnpm add @cireilclaw/plugin-github` in the root
        agent = js.root(tmp_path, '[[plugins]]\npackage = "@cireilclaw/plugin-github"\n', GITHUB_TOOLS)
        root = agent.parents[1]
        (root / "package.json").write_text(
            '{"dependencies":{},"name":"cireilclaw-local","private":true,"type":"module"}'
        )
        (root / "node_modules" / "@cireilclaw").mkdir(parents=True)
        (root / "node_modules" / "@cireilclaw" / "plugin-github").symlink_to(js.github)
    _github_config(agent, js)
    loaded = cireil.load(agent)
    assert loaded.warnings == []
    plugin_tools = sorted(t.name for t in loaded.tools if t.origin == "plugin:github")
    assert plugin_tools == ["github-list-issues", "github-read-issue"]
    read = loaded.tool("github-read-issue")
    assert read.description == "Get detailed information about a specific issue."
    assert read.parameters["required"] == ["number", "owner", "repo"]
    assert read.parameters["properties"]["number"] == {"type": "integer", "minimum": 1, "description": "Issue number"}
    result = loaded.call("github-read-issue", owner="octo", repo="demo", number=7)
    assert result.success, result.data
    assert result.data == {
        "assignees": ["robin"],
        "body": "details",
        "comments": 2,
        "createdAt": "2026-01-01T00:00:00Z",
        "htmlUrl": "https://github.com/octo/demo/issues/7",
        "labels": ["bug"],
        "number": 7,
        "state": "open",
        "success": True,
        "title": "It broke",
        "updatedAt": "2026-01-02T00:00:00Z",
        "user": "sam",
    }
    methods = [(m, p) for m, p, _ in github_api.seen]
    assert methods == [("POST", "/app/installations/42/access_tokens"), ("GET", "/repos/octo/demo/issues/7")]
    assert github_api.seen[0][2].startswith("Bearer ey")  # a JWT signed by the host's key normalisation
    assert github_api.seen[1][2] == "Bearer ghs_fake"
    missing = loaded.call("github-read-issue", owner="octo", repo="demo", number=8)
    assert not missing.success and missing["error"].startswith("GitHub API error (404)")


# -- config and state -----------------------------------------------------------------------------------------
KEEPER = """\
"keeper-config": {
  description: "Its config files.",
  parameters: vb.object({}),
  async execute(_input, ctx) {
    return { success: true, global: await ctx.cfg.globalPlugin("keeper"), agent: await ctx.cfg.agentPlugin("keeper"),
             none: (await ctx.cfg.agentPlugin("other")) === undefined };
  },
},
"keeper-put": {
  description: "Keep a value.",
  parameters: vb.object({ name: vb.string(), value: vb.string() }),
  async execute(input, ctx) {
    await ctx.pluginState.writeText(input.name, input.value);
    return { success: true };
  },
},
"keeper-get": {
  description: "Read a value.",
  parameters: vb.object({ name: vb.string() }),
  async execute(input, ctx) {
    const value = await ctx.pluginState.readText(input.name);
    return { success: true, value: value ?? null, missing: value === undefined };
  },
},
"keeper-drop": {
  description: "Forget a value.",
  parameters: vb.object({ name: vb.string() }),
  async execute(input, ctx) {
    await ctx.pluginState.remove(input.name);
    return { success: true };
  },
},
"""
KEEPER_TOOLS = "keeper-config = true\nkeeper-put = true\nkeeper-get = true\nkeeper-drop = true\n"


def test_a_plugin_reads_its_config_files_as_the_original_gives_them(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "keeper"\n', KEEPER_TOOLS)
    js.plugin(agent, "keeper", KEEPER)
    (agent.parents[1] / "config" / "plugins").mkdir()
    (agent.parents[1] / "config" / "plugins" / "keeper.toml").write_text('apiKey = "g"\nwhen = 2026-01-02\n')
    (agent / "config" / "plugins").mkdir()
    (agent / "config" / "plugins" / "keeper.toml").write_text("[limits]\nmax = 3\n")
    data = cireil.load(agent).call("keeper-config").data
    # two files, never merged (each plugin decides); TOML dates arrive as ISO text
    assert data == {
        "success": True,
        "global": {"apiKey": "g", "when": "2026-01-02"},
        "agent": {"limits": {"max": 3}},
        "none": True,
    }


def test_plugin_state_is_where_the_original_keeps_it_within_the_quota(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "Keeper.JS"\nstateQuotaBytes = 10\n', KEEPER_TOOLS)
    js.plugin(agent, "Keeper.JS", KEEPER)
    loaded = cireil.load(agent)
    assert loaded.warnings == []
    assert loaded.call("keeper-put", name="a/b.txt", value="12345").success
    folder = agent / "state" / folder_slug("Keeper.JS")
    assert folder.name == "keeper.js"
    assert (folder / ".id").read_text() == "Keeper.JS"  # the owner, as the original writes it
    assert (folder / "a" / "b.txt").read_text() == "12345"
    assert stat.S_IMODE((folder / "a" / "b.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert loaded.call("keeper-get", name="a/b.txt")["value"] == "12345"
    assert loaded.call("keeper-put", name="a/b.txt", value="1234567890").success  # a replacement counts once
    over = loaded.call("keeper-put", name="c", value="x")
    assert not over.success and "would exceed the plugin quota (11 > 10 bytes)" in over["error"]
    assert not (folder / "c").exists() and [p.name for p in folder.iterdir() if p.name.startswith(".tmp")] == []
    for name, why in [("../x", "path traversal"), ("/etc/passwd", "must be relative"), (".id", "reserved")]:
        refused = loaded.call("keeper-put", name=name, value="x")
        assert not refused.success and why in refused["error"], refused.data
    assert (folder / ".id").read_text() == "Keeper.JS"
    (folder / "link").symlink_to(tmp_path)
    assert "symlink" in loaded.call("keeper-get", name="link/x")["error"]
    assert loaded.call("keeper-drop", name="a/b.txt").success
    assert loaded.call("keeper-get", name="a/b.txt")["missing"] is True
    assert loaded.call("keeper-drop", name="a/b.txt").success  # removing what is gone is no error
    # a folder owned by another plugin id is refused, never shared
    (folder / ".id").write_text("someone-else")
    taken = loaded.call("keeper-get", name="x")
    assert not taken.success and "belongs to plugin id 'someone-else'" in taken["error"]


# -- host services ---------------------------------------------------------------------------------------------
SERVICES_PRELUDE = """\
import { xchacha20poly1305 } from "@noble/ciphers/chacha.js";
import { KeyPoolManager } from "@cireilclaw/sdk";
const hex = (b) => Buffer.from(b).toString("hex");
async function attempt(f) {
  try { return { ok: await f() }; } catch (e) { return { error: e.message, name: e.name }; }
}
"""
SERVICES = """\
"files": {
  description: "Files through the sandbox.",
  parameters: vb.object({}),
  async execute(_input, ctx) {
    return {
      success: true,
      read: await ctx.fs.readTextFile("/workspace/hello.txt"),
      write: await attempt(() => ctx.fs.writeTextFile("/workspace/out/new.txt", "made")),
      stat: await ctx.fs.stat("/workspace/hello.txt"),
      list: await ctx.fs.listDir("/workspace"),
      outside: await attempt(() => ctx.fs.readTextFile("/etc/passwd")),
      escape: await attempt(() => ctx.fs.readTextFile("/workspace/../../../etc/passwd")),
      readOnly: await attempt(() => ctx.fs.writeTextFile("/workspace/ro/x.txt", "no")),
      checkWrite: await attempt(() => ctx.paths.checkWriteAccess("/workspace/ro/x.txt")),
      resolved: await ctx.paths.resolve("/workspace/hello.txt"),
      mounts: ctx.mounts,
    };
  },
},
"primitives": {
  description: "Crypto, ids, key pools.",
  parameters: vb.object({}),
  async execute(_input, ctx) {
    const key = await ctx.crypto.randomBytes(32);
    const nonce = await ctx.crypto.randomBytes(24);
    const aad = new TextEncoder().encode("aad");
    const sealed = await ctx.crypto.xchacha20poly1305(key, nonce, aad).encrypt(new TextEncoder().encode("secret"));
    const noble = xchacha20poly1305(key, nonce, aad).encrypt(new TextEncoder().encode("secret"));
    const opened = await ctx.crypto.xchacha20poly1305(key, nonce, aad).decrypt(noble);
    sealed[0] ^= 1;
    const tampered = await attempt(() => ctx.crypto.xchacha20poly1305(key, nonce, aad).decrypt(sealed));
    const signer = await ctx.crypto.ed25519.generateKeyPair();
    const data = new TextEncoder().encode("msg");
    const signature = await ctx.crypto.ed25519.sign(signer.privateKeyPkcs8, data);
    const a = await ctx.crypto.x25519.generateKeyPair();
    const b = await ctx.crypto.x25519.generateKeyPair();
    const pool = ctx.createKeyPool(["k1", "k2"]);
    const ids = [await ctx.ids.ulid(), await ctx.ids.ulid()];
    const pem = (await import("node:crypto")).generateKeyPairSync("ec", { namedCurve: "P-256" })
      .privateKey.export({ type: "sec1", format: "pem" });
    return {
      success: true,
      sameAsNoble: hex(sealed.slice(1)) === hex(noble.slice(1)),
      opened: new TextDecoder().decode(opened),
      tampered,
      verified: await ctx.crypto.ed25519.verify(signer.publicKey, signature, data),
      forged: await ctx.crypto.ed25519.verify(signer.publicKey, signature, new TextEncoder().encode("other")),
      publicLength: signer.publicKey.length,
      agreed: hex(await ctx.crypto.x25519.derive(a.privateKeyPkcs8, b.publicKey))
        === hex(await ctx.crypto.x25519.derive(b.privateKeyPkcs8, a.publicKey)),
      hkdf: hex(await ctx.crypto.hkdf(new Uint8Array([1]), new Uint8Array([2]), new Uint8Array([3]), 8)),
      keys: [pool.getNextKey(), pool.getNextKey()],
      samePool: pool === KeyPoolManager.getPool(["k1", "k2"]),
      ids,
      normalized: (await ctx.crypto.loadNormalizedKey({ data: pem })).format,
      keyFile: await attempt(() => ctx.crypto.loadNormalizedKey({ path: "/workspace/key.pem" })),
      hostKey: await attempt(() => ctx.crypto.loadNormalizedKey({ path: "/etc/ssl/x.pem", kind: "host" })),
    };
  },
},
"channels": {
  description: "What cireil refuses.",
  parameters: vb.object({}),
  async execute(_input, ctx) {
    ctx.addToolMessage("note");
    return {
      success: true,
      send: await attempt(() => ctx.reply.send("hello")),
      react: await attempt(() => ctx.reply.react("+1")),
      resolve: await attempt(() => ctx.channel.resolveChannel("owner")),
    };
  },
},
"fetcher": {
  description: "net.fetch.",
  parameters: vb.object({ url: vb.string() }),
  async execute(input, ctx) {
    const response = await ctx.net.fetch(input.url);
    return { success: true, status: response.status, body: await response.json() };
  },
},
"""


def test_each_host_service_is_implemented_or_refused_by_name(js, tmp_path, github_api):
    tools = "files = true\nprimitives = true\nchannels = true\nfetcher = true\n"
    agent = js.root(tmp_path, '[[plugins]]\nname = "svc"\n', tools)
    where = js.plugin(agent, "svc", SERVICES, prelude=SERVICES_PRELUDE, sdk=True)
    noble = js.checkout / "packages" / "runtime" / "node_modules" / "@noble"
    (where / "node_modules" / "@noble").symlink_to(noble.resolve())
    ro = tmp_path / "readonly"
    ro.mkdir()
    (agent / "config" / "sandbox.toml").write_text(
        f'backend = "bwrap"\n[[mounts]]\nsource = "{ro}"\ntarget = "ro"\nmode = "ro"\n'
    )
    os.symlink("/etc/passwd", agent / "workspace" / "escape")
    loaded = cireil.load(agent)
    assert [str(w) for w in loaded.warnings] == []

    files = loaded.call("files").data
    assert files["read"] == "hello\n"
    assert files["write"] == {} and (agent / "workspace" / "out" / "new.txt").read_text() == "made"
    assert files["stat"]["isFile"] and files["stat"]["size"] == 6
    assert {"name": "hello.txt", "isDirectory": False, "isFile": True} in files["list"]
    assert files["outside"]["name"] == "ToolError" and "outside the sandbox" in files["outside"]["error"]
    assert "Access denied" in files["escape"]["error"]
    assert "read-only mount" in files["readOnly"]["error"] and "read-only mount" in files["checkWrite"]["error"]
    assert files["resolved"] == str((agent / "workspace" / "hello.txt").resolve())
    assert files["mounts"] == [{"mode": "ro", "source": str(ro), "target": "ro"}]

    (agent / "workspace" / "key.pem").write_text(
        "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=\n"
        "-----END PUBLIC KEY-----\n"
    )
    primitives = loaded.call("primitives").data
    assert primitives["sameAsNoble"] and primitives["opened"] == "secret"
    assert "invalid tag" in primitives["tampered"]["error"]
    assert primitives["verified"] is True and primitives["forged"] is False and primitives["publicLength"] == 32
    assert primitives["agreed"] is True
    import hashlib
    import hmac

    prk = hmac.new(b"\x02", b"\x01", hashlib.sha256).digest()
    assert primitives["hkdf"] == hmac.new(prk, b"\x03\x01", hashlib.sha256).digest()[:8].hex()  # RFC 5869, SHA-256
    assert primitives["keys"] == ["k1", "k2"] and primitives["samePool"] is True
    assert all(len(i) == 26 and i.isalnum() for i in primitives["ids"]) and primitives["ids"][0] != primitives["ids"][1]
    assert primitives["normalized"] == "pkcs8"
    assert primitives["keyFile"] == {"ok": {"format": "spki", "data": primitives["keyFile"]["ok"]["data"]}}
    assert "kind 'host' is not available in cireil" in primitives["hostKey"]["error"]

    channels = loaded.call("channels")
    for method, result in [("reply.send", "send"), ("reply.react", "react"), ("channel.resolveChannel", "resolve")]:
        assert channels[result]["error"].startswith(f"{method} is not available in cireil"), channels[result]
    time.sleep(0.2)  # addToolMessage is fire-and-forget: its refusal lands in the plugin's log
    fetched = loaded.call("fetcher", url=f"{github_api.origin}/repos/octo/demo/issues/7")
    assert fetched["status"] == 200 and fetched["body"]["number"] == 7


def test_hchacha20_matches_the_xchacha_draft_vector(js, tmp_path):
    # draft-irtf-cfrg-xchacha-03 §2.2.1: the subkey XChaCha20-Poly1305 is built on
    script = tmp_path / "vector.mjs"
    host = jsplugins.__file__.replace("jsplugins.py", "js/host.mjs")
    source = Path(host).read_text()
    body = source[source.index("function hchacha20") : source.index("function xchacha")]
    script.write_text(
        body + "const key = Buffer.from([...Array(32).keys()]);\n"
        "const nonce = Buffer.from('000000090000004a0000000031415927', 'hex');\n"
        "process.stdout.write(hchacha20(key, nonce).toString('hex'));\n"
    )
    import subprocess

    out = subprocess.run([str(js.node), str(script)], capture_output=True, text=True, check=True).stdout
    assert out == "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc"


# -- misbehaving plugins ---------------------------------------------------------------------------------------
BAD = """\
"throws": {
  description: "Throws.",
  parameters: vb.object({ tool: vb.boolean() }),
  async execute(input) {
    console.error("about to fail");
    if (input.tool) {
      const e = new Error("no such repo"); e.name = "ToolError"; e.hint = "Check the owner."; throw e;
    }
    throw new TypeError("undefined is not a function");
  },
},
"hangs": {
  description: "Never returns.",
  parameters: vb.object({}),
  async execute() {
    console.log("hanging now");
    await new Promise(() => {});
  },
},
"spins": {
  description: "Blocks its event loop forever.",
  parameters: vb.object({}),
  async execute() { for (;;) {} },
},
"dies": {
  description: "Exits its process.",
  parameters: vb.object({}),
  async execute() { process.exit(3); },
},
"fine": {
  description: "Works.",
  parameters: vb.object({}),
  async execute() { return { success: true, pid: process.pid }; },
},
"noshape": {
  description: "Returns no success field.",
  parameters: vb.object({}),
  async execute() { return { value: 1 }; },
},
"""
BAD_TOOLS = "throws = true\nhangs = true\nspins = true\ndies = true\nfine = true\nnoshape = true\n"


def test_a_throwing_tool_is_a_failed_result_with_its_hint(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "bad"\n', BAD_TOOLS)
    js.plugin(agent, "bad", BAD)
    loaded = cireil.load(agent)
    assert loaded.call("throws", tool=True).data == {
        "error": "no such repo",
        "hint": "Check the owner.",
        "success": False,
    }
    assert loaded.call("throws", tool=False).data == {"error": "undefined is not a function", "success": False}
    shape = loaded.call("noshape")
    assert shape["error"] == "Plugin tool must return an object with a boolean success field"
    assert loaded.call("fine").success  # the worker lives on


def test_a_hanging_call_ends_at_the_timeout_and_the_worker_restarts(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "bad"\n', BAD_TOOLS)
    js.plugin(agent, "bad", BAD)
    (agent / "config" / "cireil.toml").write_text("[limits]\nplugin_timeout_s = 0.5\n")
    loaded = cireil.load(agent)
    first = loaded.call("fine")["pid"]
    for tool in ("hangs", "spins"):  # awaiting forever, and a loop that never yields: both are ended
        started = time.monotonic()
        result = loaded.call(tool)
        assert time.monotonic() - started < 5
        assert not result.success
        assert (
            f"tool '{tool}' did not finish within 0.5 s (limits.plugin_timeout_s in config/cireil.toml)"
            in result["error"]
        )
        assert "starts again on the next call" in result["error"]
    again = loaded.call("fine")
    assert again.success and again["pid"] != first


def test_an_interrupt_ends_a_hanging_call_at_once(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "bad"\n', BAD_TOOLS)
    js.plugin(agent, "bad", BAD)
    loaded = cireil.load(agent)  # the default timeout: 10 minutes
    pid = loaded.call("fine")["pid"]
    loop = RuntimeLoop()
    try:
        running = loop.submit(loaded.acall("spins"))
        time.sleep(0.5)
        started = time.monotonic()
        running.cancel()  # what a kernel interrupt and the form's Cancel do to the submitted call
        assert running.cancel_and_wait(5)
        assert time.monotonic() - started < 3
    finally:
        loop.stop()
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the worker is gone, not left spinning
    again = loaded.call("fine")
    assert again.success and again["pid"] != pid


def test_a_crashed_worker_restarts_on_the_next_call(js, tmp_path):
    agent = js.root(tmp_path, '[[plugins]]\nname = "bad"\n', BAD_TOOLS)
    js.plugin(agent, "bad", BAD)
    loaded = cireil.load(agent)
    died = loaded.call("dies")
    assert not died.success and died["error"] == "plugin bad: its worker exited with code 3 during the call"
    assert loaded.call("fine").success


def test_a_syntax_error_is_named_at_load_and_the_rest_loads(js, tmp_path):
    plugins = '[[plugins]]\nname = "broken"\n[[plugins]]\nname = "echoer"\n[[plugins]]\npackage = "@someone/absent"\n'
    agent = js.root(tmp_path, plugins, "echo = true\nbroken-tool = true\nlist-dir = true\n")
    js.plugin(agent, "echoer", ECHO, prelude=ECHO_SCHEMA)
    (js.plugin(agent, "broken", "") / "index.mjs").write_text("export default () => ({ name: 'broken', tools: {{ }\n")
    loaded = cireil.load(agent)
    warnings = [str(w) for w in loaded.warnings]
    assert len(warnings) == 2
    assert warnings[0].startswith(
        "../../config/plugins.toml:1: warning: plugin 'broken' did not load: plugin broken failed"
    )
    assert "SyntaxError" in warnings[0] and "to fix: fix the plugin's code or reinstall it" in warnings[0]
    assert warnings[1].startswith(
        "../../config/plugins.toml:5: warning: plugin package '@someone/absent' did not load: plugin package "
        "@someone/absent is not installed in "
    )
    assert "to fix: run: cd " in warnings[1] and "pnpm add @someone/absent" in warnings[1]
    assert loaded.call("echo", text="still here")["text"] == "still here"
    stand_in = loaded.call("broken-tool")  # enabled, its plugin broken: it says why, the agent still works
    assert not stand_in.success and "plugin 'broken' did not load" in stand_in["error"]
    offered = [t["function"]["name"] for t in loaded.prompt().body["tools"]]
    assert "echo" in offered and "broken-tool" not in offered  # the model is not offered a tool that cannot run


def test_without_node_dry_run_says_which_plugins_need_it_and_how_to_get_it(js, tmp_path, monkeypatch):
    old = tmp_path / "bin"
    old.mkdir()
    (old / "node").write_text("#!/bin/sh\necho v20.19.0\n")
    (old / "node").chmod(0o755)
    monkeypatch.delenv("CIREIL_NODE")
    monkeypatch.setenv("PATH", f"{old}:/usr/bin:/bin")
    monkeypatch.setattr(node, "CACHE", tmp_path / "nothing" / "node")
    agent = js.root(tmp_path, '[[plugins]]\nname = "echoer"\n', "echo = true\nlist-dir = true\n")
    js.plugin(agent, "echoer", ECHO, prelude=ECHO_SCHEMA)
    report = cireil.dry_run(agent)
    assert report.errors == []
    [warning] = [str(w) for w in report.warnings if "plugins.toml" in str(w)]
    assert warning.startswith(
        "../../config/plugins.toml:1: warning: plugin 'echoer' did not load: no Node >= 22 found ("
    )
    assert f"{old}/node is Node v20.19.0, too old (the original's plugins need Node >= 22)" in warning
    assert "get one: npm install --prefix" in warning and "node@22" in warning
    loaded = cireil.load(agent)
    assert loaded.call("list-dir", path="/workspace").success  # everything else works
    assert "no Node >= 22 found" in loaded.call("echo", text="x")["error"]


EXTRACTOR = """[{
  glob: "*.custom",
  priority: 10,
  extract(_path, content) {
    return content.split("\\n").flatMap((line, i) => line.startsWith("## ")
      ? [{ id: line.slice(3).toLowerCase(), label: line.slice(3), line: i + 1, type: "h2", lines: 2 }] : []);
  },
}]"""


def test_a_plugin_extractor_outlines_files_through_its_worker(js, tmp_path):
    from cireil.runtime.outline import build_outline

    agent = js.root(tmp_path, '[[plugins]]\nname = "echoer"\n', "echo = true\n")
    js.plugin(agent, "echoer", ECHO, prelude=ECHO_SCHEMA, extractors=EXTRACTOR)
    cireil.load(agent)
    outline = build_outline("/workspace/notes.custom", "## One\nx\n## Two\ny\n", force=True)
    assert [(s["label"], s["line"]) for s in outline["sections"]] == [("One", 1), ("Two", 3)]
