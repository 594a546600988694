"""Attaching to the running original CireilClaw: a recording proxy between it and its model provider.

`state.py` rewrites the agent's engine.toml to the proxy and back (byte for byte), `proxy.py` forwards every
request unchanged, `capture.py` turns each exchange into recorded turns (`link.py` says which session),
`wire.py` reads the three provider protocols' replies; `reconstruct.py` rebuilds the turns run before
attaching from sessions.db. Sits above the recorder: it writes its store.
"""
