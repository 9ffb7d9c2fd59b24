"""The error classes (public name; the code lives in skipidx.core.errors)."""
from skipidx.core.errors import (  # noqa: F401
    SkipidxError,
    ParseError,
    BindError,
    CorruptionError,
)

__all__ = ['SkipidxError', 'ParseError', 'BindError', 'CorruptionError']
