"""What sharing an agent with the original CireilClaw needs: its runtime root, and what cireil does not honour."""
