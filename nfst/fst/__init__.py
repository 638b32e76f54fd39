"""Marked FSTs and their lattices: building T, compiling T_{x,y} through OpenFst, the flat
lattice arrays, and compiling (and caching) whole datasets."""
