"""Evaluation: per-pair metrics, evaluating samplers and SMC methods on held-out pairs, and
text tables of the results."""
