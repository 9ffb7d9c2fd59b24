"""Compiled (numba) inner loops shared by hashing, tokenizers, SBBF and index builds.

Everything here works on plain numpy arrays (Arrow buffers viewed as numpy)
and is JIT-compiled with ``cache=True`` so a process pays the compile once per
machine. Nothing here validates input: callers in the public modules do.
"""
