"""Numba kernel modules imported on first use, not when their caller is imported.

Importing numba costs ~0.2 s of CPU and loading the first cached kernel ~0.45 s
more, most of a new process's start-up; a process that answers one small
query with the numpy paths never pays either. ``kernels(name)`` stands for
the module ``name``: the first attribute read imports it, later reads go
straight to it (so tests that patch the module's attributes see their patch).
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType
from collections.abc import Callable
from typing import Any

__all__ = ["kernels", "njit", "numba_loaded", "use_numpy_path", "NUMPY_PATH_BYTES", "compute", "parquet"]


class _LazyModule:
    __slots__ = ("_name", "_mod")

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_mod", None)

    def _load(self) -> ModuleType:
        mod = self._mod
        if mod is None:
            mod = importlib.import_module(self._name)
            object.__setattr__(self, "_mod", mod)
        return mod

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._load(), attr)

    def __setattr__(self, attr: str, value: Any) -> None:
        setattr(self._load(), attr, value)

    def __repr__(self) -> str:
        return f"<kernels {self._name!r} ({'loaded' if self._mod is not None else 'not loaded'})>"

    def __reduce__(self) -> tuple:   # pickled by name (a loaded module itself is not picklable)
        return kernels, (self._name,)


def kernels(name: str) -> Any:
    """The module `name`, imported when one of its attributes is first read."""
    mod = sys.modules.get(name)
    return mod if mod is not None else _LazyModule(name)


#: ``pyarrow.compute``, imported when first used: its import wraps each of Arrow's ~280
#: compute functions in a documented Python function, a large part of a new process's
#: start-up, and a small indexed query calls none of them. The library's modules take
#: it as ``from skipidx.core.lazy import compute as pc``.
compute: Any = kernels("pyarrow.compute")
#: ``pyarrow.parquet``, imported when first used (it imports ``pyarrow.fs`` and the cloud file
#: systems): reading parts needs only ``pyarrow._parquet`` (skipidx.store.reader_pool).
parquet: Any = kernels("pyarrow.parquet")


def numba_loaded() -> bool:
    """Whether this process has imported numba already (then a kernel costs only its own cache load)."""
    return sys.modules.get("numba") is not None


#: Bytes of input a process may send through the numpy stand-ins of kernels before numba is
#: loaded: a process answering a few small queries never loads numba (~0.65 s), one that goes
#: on scanning loads it once and has the kernels (several times faster per byte) from then on.
NUMPY_PATH_BYTES = 64 << 20
_numpy_left = [NUMPY_PATH_BYTES]


def use_numpy_path(nbytes: int) -> bool:
    """True if a call over `nbytes` of input is to take its numpy path: numba is not loaded
    and the process's allowance covers it (it is then spent). Both paths give the same answer."""
    if numba_loaded() or nbytes > _numpy_left[0]:
        return False
    _numpy_left[0] -= nbytes   # unlocked: a race only moves the switch by one call
    return True


class _LazyKernel:
    """A function compiled by ``numba.njit(**opts)`` on its first call (numba is imported then).

    Before compiling, every other lazy kernel among the function's module
    globals is compiled and every lazy module imported, each put in its place
    there, so numba types calls between kernels (it only knows its own
    dispatchers and real modules).
    """

    def __init__(self, fn: Callable[..., Any], opts: dict[str, Any]) -> None:
        self.py_func = fn
        self._opts = opts
        self._disp: Any = None
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__

    def dispatcher(self) -> Any:
        if self._disp is None:
            import numba

            disp = numba.njit(**self._opts)(self.py_func)
            g = self.py_func.__globals__
            if g.get(self.__name__) is self:
                g[self.__name__] = disp
            self._disp = disp   # set before the callees: a kernel calling itself back finds it
            for k, v in list(g.items()):
                if isinstance(v, _LazyKernel):
                    g[k] = v.dispatcher()
                elif isinstance(v, _LazyModule):
                    g[k] = v._load()
        return self._disp

    def __call__(self, *args: Any) -> Any:
        return self.dispatcher()(*args)

    def __reduce__(self) -> tuple:   # pickled by reference, as a function is
        return _module_attr, (self.__module__, self.__name__)

    def __getattr__(self, attr: str) -> Any:   # signatures, inspect_types, ... of the compiled one
        return getattr(self.dispatcher(), attr)


def _module_attr(module: str, name: str) -> Any:
    return getattr(importlib.import_module(module), name)


def njit(**opts: Any) -> Callable[[Callable[..., Any]], _LazyKernel]:
    """``numba.njit(**opts)`` applied on the function's first call instead of at import.

    The compiled function and its cache entry are the same as with the
    decorator applied at import (same function, file and name).
    """
    def wrap(fn: Callable[..., Any]) -> _LazyKernel:
        return _LazyKernel(fn, opts)
    return wrap
