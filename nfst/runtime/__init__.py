"""Infrastructure every layer may use: atomic checksummed files, interrupt handling, thread
counts, devices, sharing work between torchrun ranks, and checking settings given as text.

(Nothing is imported here: ``nfst.fst`` reads files through ``storage``, and importing the
package must not load torch for that.)
"""
