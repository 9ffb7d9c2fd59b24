"""Typed expressions: the bound tree, its visitors and the function catalogue."""
