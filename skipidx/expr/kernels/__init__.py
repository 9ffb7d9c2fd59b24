"""The Arrow kernels behind the function catalogue (ClickHouse 26.9 semantics,
checked row by row against chDB in tests/expr/test_kernels_chdb.py).

Conventions: inputs are Arrow arrays (or chunked arrays; dictionaries of
strings for LowCardinality), string constants are ``bytes``; outputs keep the
input's shape; NULL in gives NULL out; boolean results stand for ClickHouse's
UInt8. Bad constant arguments raise :class:`~skipidx.core.errors.SkipidxError`.
The modules group them by domain: :mod:`.strings`, :mod:`.compare` (also IN,
NULL tests, three-valued logic), :mod:`.arithmetic`; :mod:`._search` holds the
compiled whole-buffer substring/token searches.
"""
from skipidx.expr.kernels._arrow import ArrayLike
from skipidx.expr.kernels.arithmetic import arithmetic, arithmetic_result_type, negate, negate_result_type
from skipidx.expr.kernels.compare import (
    and_, compare, is_in, is_not_null, is_null, literal, not_, or_, where_mask,
)
from skipidx.expr.kernels.strings import (
    check_token_needle, ends_with, has_token, has_tokens, has_token_case_insensitive, has_token_or_null, length, like,
    like_to_regex, lower, match, multi_search_any, starts_with, upper,
)

__all__ = [
    "ArrayLike", "has_token", "has_tokens", "has_token_or_null", "has_token_case_insensitive", "check_token_needle", "like",
    "like_to_regex", "starts_with", "ends_with", "multi_search_any", "match", "lower", "upper", "length",
    "compare", "is_in", "is_null", "is_not_null", "and_", "or_", "not_", "where_mask", "arithmetic",
    "arithmetic_result_type", "negate", "negate_result_type", "literal",
]
