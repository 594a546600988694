"""config/cron.toml jobs: their schedule syntax, their definitions, and the runner on the runtime loop."""
