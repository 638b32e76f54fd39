"""Sequential Monte Carlo over lattice paths: particle filtering and smoothing, resampling,
lookaheads and their fitting, the beam-search baseline, abstract particles (001) and distinct
samples without replacement."""
