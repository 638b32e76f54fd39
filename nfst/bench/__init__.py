"""Benchmarks: each compares against a reference in the same run and returns a dict that the CLI
prints as one JSON object on its last line (``nfst bench NAME``)."""
