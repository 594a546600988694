"""What the magics show: display objects and live widgets for results, turns, servers and evals."""
