"""Experiments: presets, run configuration, the `nfst run` pipeline, reports, lattice
statistics and `nfst sample`."""
