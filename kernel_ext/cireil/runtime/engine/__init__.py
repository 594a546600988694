"""Agent turns: engine.toml, the model provider, prompt assembly and the turn loop (reference §7, §8)."""
