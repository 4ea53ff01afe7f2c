"""Triton kernels and their launchers, one op per file. These modules import only triton and torch."""
