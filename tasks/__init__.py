"""The built-in tasks; importing this package registers them (see ``nfst.task``).

- ``cipher``: synthetic, 5 substitution ciphers then a noisy copy (the default task)
- ``tr``: Dakshina Urdu reverse transliteration (needs the data directory)
- ``scan``: the SCAN length split, generated from the grammar
"""

from . import cipher, scan, tr

__all__ = ["cipher", "scan", "tr"]
