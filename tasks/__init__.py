"""The built-in tasks, one module each; ``nfst.task.get_task`` imports them by name.

- ``cipher``: synthetic, 5 substitution ciphers then a noisy copy (the default task)
- ``tr``: Dakshina Urdu reverse transliteration (needs the data directory)
- ``scan``: the SCAN length split, generated from the grammar
"""
