"""Parameter checks shared by the built-in tokenizers."""
from __future__ import annotations

import numbers
from typing import Any

from skipidx.core.errors import SkipidxError


def check_seed(tokenizer: str, seed: Any) -> int:
    """A hash seed: an integer in [0, 2**64)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= int(seed) < 2**64:
        raise SkipidxError(f"tokenizer {tokenizer!r}: seed must be an integer in [0, 2**64), got {seed!r}")
    return int(seed)


def check_no_params(tokenizer: str, params: dict[str, Any], allowed: tuple[str, ...] = ()) -> None:
    extra = sorted(set(params) - set(allowed))
    if extra:
        takes = f"takes only {', '.join(allowed)}" if allowed else "takes no parameters"
        raise SkipidxError(f"tokenizer {tokenizer!r} {takes}; got unknown parameter(s) {', '.join(extra)}")
