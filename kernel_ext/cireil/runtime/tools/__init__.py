"""One module per built-in tool; each exposes TOOL (see runtime/toolkit/registry.py)."""
