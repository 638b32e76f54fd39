"""Infrastructure every layer may use: atomic checksummed files, interrupt handling, thread
counts and devices."""
