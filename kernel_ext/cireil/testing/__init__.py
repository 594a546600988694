"""Stand-ins for a hosted model, for tests and offline tutorials: scripted servers on loopback.

Imports nothing of cireil, so any layer may start one (replay serves recorded replies through it).
"""
