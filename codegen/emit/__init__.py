"""Emission: fixed IR to C and ARM assembly. Templates format, Python decides; the assembly
generators share one helper module."""
