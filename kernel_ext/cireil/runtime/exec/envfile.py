"""The workspace `.env` file: variables added to the sandbox's environment (reference §4.12).

Parsed on every call, so an edit takes effect at the next command. The rules are deliberately
plain: no quote stripping and no `export` handling, exactly as the reference runtime reads it.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

# ${NAME}, ${NAME:-default} or $NAME, NAME being \w+; the default is literal (never expanded)
_REF = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}|\$(\w+)")


MAX_BYTES = 1 << 20


class EnvFileError(ValueError):
    """A variable reference in .env that cannot be expanded; the message names the line."""


def parse_env_text(text: str, host_env: Mapping[str, str]) -> dict[str, str]:
    """Parse .env text into expanded variables; raises EnvFileError (`Line n: ...`)."""
    raw: dict[str, tuple[str, int]] = {}  # key -> (unexpanded value, line number), later lines win
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        key = key.strip()
        if key:
            raw[key] = (value.strip(), number)

    order = list(raw)
    own: dict[str, str] = {}  # key -> its value expanded once (defaults and host values literal)

    def expand_text(text: str, position: int, number: int, stack: tuple[str, ...]) -> str:
        def substitute(match: re.Match[str]) -> str:
            name = match.group(1) or match.group(3)
            default = match.group(2)
            if name in stack:
                raise EnvFileError(f"Line {number}: Circular reference to '{name}'")
            if name in raw and order.index(name) < position:  # earlier keys only: `PATH=$PATH:/x` reads the host
                # an earlier key's value is expanded again, so a `$SELF` a default brought in is caught
                return expand_text(value_of(name), order.index(name), number, (*stack, name))
            if name in host_env:
                return host_env[name]
            if default is not None:
                return default
            raise EnvFileError(f"Line {number}: Undefined variable '{name}'")

        return _REF.sub(substitute, text)

    def value_of(key: str) -> str:
        if key not in own:
            value, number = raw[key]
            own[key] = expand_text(value, order.index(key), number, ())
        return own[key]

    return {key: value_of(key) for key in order}


def load_env_file(path: Path, host_env: Mapping[str, str]) -> dict[str, str]:
    """The variables of the workspace .env; none when the file does not exist.

    The file lives where sandboxed commands write, so it is opened without following a final
    symlink and without blocking, and must be a regular file of sane size: a FIFO planted there
    would otherwise hang the runtime's event loop at the next call.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except OSError as exc:
        raise EnvFileError(f"The .env file cannot be opened: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise EnvFileError("The .env file is not a regular file")
        if info.st_size > MAX_BYTES:
            raise EnvFileError(f"The .env file is larger than {MAX_BYTES} bytes")
        text = handle.read(MAX_BYTES + 1).decode("utf-8", "replace")
    return parse_env_text(text, host_env)
