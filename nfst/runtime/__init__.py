"""Infrastructure every layer may use: atomic checksummed files, interrupt handling, thread
counts, devices, and sharing work between torchrun ranks."""
