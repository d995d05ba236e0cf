"""Benchmarks: `python -m benchmarks` prints the figures the issues ask for."""
