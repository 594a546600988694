"""Start the SDK server of sdk_server.py in a subprocess on a free loopback port; write mcp.toml for it."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SERVER = Path(__file__).with_name("sdk_server.py")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def sdk_server(
    *flags: str, python: str = sys.executable, startup_s: float = 30.0, port: int | None = None
) -> Iterator[str]:
    """Yields the endpoint URL once the server accepts connections (on `port`: a server restarted where it was)."""
    port = port or free_port()
    # stderr goes to a file, not a pipe nobody reads: a server logging a traceback per failing call would fill a
    # pipe after a few and then stop answering mid-test
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([python, str(SERVER), str(port), *flags], stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + startup_s
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"MCP test server exited: {log.read().decode(errors='replace')[-2000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("MCP test server did not start") from None
                    time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def mcp_toml(servers: dict[str, str], timeout: int = 10000, headers: dict[str, str] | None = None) -> str:
    lines = []
    for name, url in servers.items():
        lines += [f"[servers.{name}]", f'url = "{url}"', f"timeout = {timeout}"]
        if headers:
            lines.append(f"[servers.{name}.headers]")
            lines += [f'{k} = "{v}"' for k, v in headers.items()]
    return "\n".join(lines) + "\n"
