"""Training: objectives, the scorer and sampler loops, training from particles, checkpoints and
torchrun helpers."""
