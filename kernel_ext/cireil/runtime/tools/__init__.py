"""One module per built-in tool; each exposes TOOL (see runtime/registry.py)."""
