"""Tools for the repository's own documentation, run from the checkout's root and not installed
with nfst: ``python -m tools.cli_reference`` (docs/cli.md) and ``python tools/summary.py``
(docs/results/*.json and the tables of docs/results.md)."""
