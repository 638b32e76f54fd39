"""Sequential Monte Carlo over lattice paths: particle filtering and smoothing, resampling,
lookaheads, and the beam-search baseline."""
