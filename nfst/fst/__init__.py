"""Marked FSTs and their lattices: building T (also from Pynini grammars, and composing through
OpenFst), compiling T_{x,y} through OpenFst, the flat lattice arrays, and compiling (and
caching) whole datasets."""
