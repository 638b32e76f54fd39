"""Experiments: presets, run configuration, the `nfst run` pipeline, reports, lattice
statistics, `nfst sample` and lattice pictures."""
