"""indexes stage of skipidx: the index types (docs/design.md, "Layout").

Importing the package registers the built-in types (``builtin``), so
``base.get_index_type`` finds them without importing upwards into its users.
"""
from skipidx.indexes import builtin  # noqa: F401
