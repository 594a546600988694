"""The project's setup (`./dev`, its plugin_node) installs Node 22 and the plugin host's helpers into cireil's
cache once, and node.py finds them there; without npm, or when npm fails, setup goes on with one note.

The function is run as `./dev` runs it (bash, `set -euo pipefail`), with an npm stand-in on PATH that does what
`npm install --prefix DIR node@22 ...` leaves behind, so these tests need no network."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cireil.runtime.plugins import node
from conftest import REPO

# `npm install --prefix DIR PKG...`: log the arguments, then lay out what the real packages install
FAKE_NPM = """\
#!/bin/sh
echo "$@" >> "$NPM_LOG"
[ -n "$NPM_FAIL" ] && { echo "npm error network unreachable" >&2; exit 1; }
prefix=""; take=0
for a in "$@"; do [ "$take" = 1 ] && prefix="$a"; take=0; [ "$a" = "--prefix" ] && take=1; done
mkdir -p "$prefix/node_modules/.bin" "$prefix/node_modules/@valibot/to-json-schema"
case " $* " in *" node@22 "*)
    printf '#!/bin/sh\\necho v22.23.3\\n' > "$prefix/node_modules/.bin/node"
    chmod +x "$prefix/node_modules/.bin/node";;
esac
"""


def _bin(tmp_path: Path, *, npm: bool, node_version: str | None) -> Path:
    """A PATH folder holding what this test wants found: an npm stand-in, a node of some version."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for tool in ("sh", "sed", "mkdir", "find", "rm", "touch", "chmod"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found and not (folder / tool).exists():
            (folder / tool).symlink_to(found)
    if npm:
        (folder / "npm").write_text(FAKE_NPM)
        (folder / "npm").chmod(0o755)
    if node_version:
        (folder / "node").write_text(
            f'#!/bin/sh\n[ "$1" = -e ] && exit $(( {node_version.split(".")[0]} < 22 ))\necho v{node_version}\n'
        )
        (folder / "node").chmod(0o755)
    return folder


def plugin_node(tmp_path: Path, cache: Path, *, npm: bool = True, node_version: str | None = None, **env: str):
    """Run dev's plugin_node as setup does; (exit status, stderr, npm calls)."""
    log = tmp_path / "npm.log"
    script = f'set -euo pipefail\neval "$(sed -n "/^plugin_node() {{/,/^}}/p" {REPO / "dev"})"\nplugin_node\n'
    bash = subprocess.run(["bash", "-c", "command -v bash"], capture_output=True, text=True).stdout.strip()
    done = subprocess.run(
        [bash, "-c", script],
        env={
            "PATH": str(_bin(tmp_path, npm=npm, node_version=node_version)),
            "HOME": str(tmp_path / "home"),
            "CIREIL_NODE_CACHE": str(cache),
            "NPM_LOG": str(log),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stderr, calls


def test_setup_installs_node_22_and_the_helpers_once_and_node_py_finds_them(tmp_path, monkeypatch):
    cache = tmp_path / "cache" / "node"
    status, err, calls = plugin_node(tmp_path, cache)
    assert status == 0 and err == ""
    assert calls == [f"install --no-audit --no-fund --silent --prefix {cache} node@22 @valibot/to-json-schema@^1.7"]
    # again: everything is there, npm is not asked
    status, err, calls = plugin_node(tmp_path, cache)
    assert status == 0 and err == "" and len(calls) == 1

    monkeypatch.delenv("CIREIL_NODE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no node on PATH: the cache is what is found
    monkeypatch.setattr(node, "CACHE", cache)
    found = node.find_node()
    assert found.path == str(cache / "node_modules" / ".bin" / "node") and found.version == "v22.23.3"
    assert str(cache / "node_modules") in node.module_folders()


def test_a_node_22_on_path_is_kept_and_only_the_helpers_are_installed(tmp_path):
    cache = tmp_path / "cache" / "node"
    status, _, calls = plugin_node(tmp_path, cache, node_version="22.4.0")
    assert status == 0
    assert calls == [f"install --no-audit --no-fund --silent --prefix {cache} @valibot/to-json-schema@^1.7"]
    assert not (cache / "node_modules" / ".bin" / "node").exists()
    status, _, calls = plugin_node(tmp_path, cache, node_version="22.4.0")
    assert status == 0 and len(calls) == 1


def test_an_old_node_on_path_still_gets_node_22_installed(tmp_path):
    cache = tmp_path / "cache" / "node"
    status, _, calls = plugin_node(tmp_path, cache, node_version="20.19.0")
    assert status == 0 and " node@22 " in f" {calls[0]} "


def test_a_failing_npm_is_one_note_setup_goes_on_and_it_is_not_retried_at_once(tmp_path):
    cache = tmp_path / "cache" / "node"
    status, err, calls = plugin_node(tmp_path, cache, NPM_FAIL="1")
    assert status == 0 and len(calls) == 1
    assert err.strip() == (
        f"note: could not install Node 22 for the original's JS plugins (see {cache}/install.log); "
        "cireil works without it, only those plugins do not load"
    )
    assert "network unreachable" in (cache / "install.log").read_text()
    status, err, calls = plugin_node(tmp_path, cache, NPM_FAIL="1")
    assert status == 0 and len(calls) == 1  # the next ./dev does not wait for npm to fail again
    assert f"delete {cache}/install.failed to try again now" in err
    (cache / "install.failed").unlink()
    status, err, calls = plugin_node(tmp_path, cache)
    assert status == 0 and err == "" and len(calls) == 2
    assert not (cache / "install.failed").exists()


def test_without_npm_setup_says_so_in_one_line_and_goes_on(tmp_path):
    status, err, calls = plugin_node(tmp_path, tmp_path / "cache" / "node", npm=False)
    assert status == 0 and calls == []
    assert err.count("\n") == 1 and err.startswith("note: npm not found, so Node 22")


@pytest.mark.skipif(os.environ.get("CIREIL_NODE_CACHE") is not None, reason="the variable is set for this run")
def test_node_py_and_dev_use_the_same_cache_folder():
    default = Path.home() / ".cache" / "cireil" / "node"
    assert default == node.CACHE
    assert '"${CIREIL_NODE_CACHE:-$HOME/.cache/cireil/node}"' in (REPO / "dev").read_text()
