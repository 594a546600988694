"""Scenario evals: does the model call the right tools, with the right arguments, reliably.

Imported only by `cireil eval` and `%cireil eval`, never at `%load_ext`.
"""
