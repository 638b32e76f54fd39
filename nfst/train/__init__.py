"""Training: objectives, the scorer and sampler loops, training from particles, the teacher's
defensive mixture, and checkpoints."""
