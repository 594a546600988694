"""One module per built-in tool; each exposes TOOL (see runtime/toolkit/registry.py).

A tool's name, description and parameter schema are what the model sees, so they are the original
CireilClaw's, byte for byte (key order included), wherever the spec does not change them: the same
history then makes the same request in both runtimes. Each change the spec makes is declared on the
tool (`Tool.spec_differences`) with its rule; `cireil tools --diff-original` lists them and
tests/peer/test_tool_definitions.py checks them against the original's own output.
"""
