"""Objects that hold a resource until ``close()``: a context manager, closed when collected."""
from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["Closing"]

_T = TypeVar("_T", bound="Closing")


class Closing:
    """A mixin for classes with an idempotent ``close()``: ``with obj:`` closes it at the end
    of the block, and garbage collection closes what was never closed (errors there are
    dropped: the interpreter may be shutting down)."""

    __slots__ = ()

    def close(self) -> None:  # pragma: no cover - every user defines it
        raise AssertionError(f"{type(self).__name__} must define close()")

    def __enter__(self: _T) -> _T:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
