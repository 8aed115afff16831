"""Benchmarks: each module compares side by side and writes its section of docs/benchmarks.md."""
