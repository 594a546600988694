"""The turn recorder: every model call of every turn kept in the agent's own `cireil-recordings.db`.

Kept apart from sessions.db (the original runtime's file) and from the engine: the engine only hands
its turn events to `Recording.observe`, and everything here is imported the first time a turn runs.
"""
