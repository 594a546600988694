"""The agent runtime, free of IPython: configuration, sandbox paths, tools, the runtime loop."""
