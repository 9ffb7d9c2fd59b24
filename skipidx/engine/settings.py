"""Query settings: ``SETTINGS k = v`` on SELECT/INSERT and the session's ``SET k = v``.

Each setting is checked against the list below (an unknown name is an error
with ClickHouse's 'maybe you meant' hint) and converted to its type. What
each does here is in docs/settings.md; the ones marked "accepted" change
nothing in skipidx (they tune ClickHouse's own machinery) and are taken so
that ClickHouse scripts run.
"""
from __future__ import annotations

from skipidx.core.dataclass_codes import dataclass
from typing import Any, Iterable, Mapping

from skipidx.core.errors import BindError, SkipidxError
from skipidx.core.hints import did_you_mean
from skipidx.sql import ast as A

__all__ = ["QUERY_SETTINGS", "QuerySettings", "resolve_settings", "setting_value"]

_BOOL, _UINT, _STR, _FLOAT = "bool", "uint", "str", "float"

#: name -> (kind, default). The first group has effects in skipidx; the second is accepted.
QUERY_SETTINGS: dict[str, tuple[str, Any]] = {
    "use_skip_indexes": (_BOOL, True),
    "force_data_skipping_indices": (_STR, ""),
    "ignore_data_skipping_indices": (_STR, ""),
    "use_skip_indexes_for_disjunctions": (_BOOL, True),
    "force_primary_key": (_BOOL, False),
    "max_threads": (_UINT, 0),
    "max_rows_to_read": (_UINT, 0),
    "max_bytes_to_read": (_UINT, 0),
    "max_block_size": (_UINT, 65409),
    "optimize_move_to_prewhere": (_BOOL, True),
    # an INSERT's workers (SET max_insert_threads; else max_threads; 0: the cores)
    "max_insert_threads": (_UINT, 0),
    "max_result_rows": (_UINT, 0),
    "query_plan_direct_read_from_text_index": (_BOOL, True),
    # skipidx's own: a scanned WHERE of exact token atoms takes its rows from the postings
    "text_index_row_filter": (_BOOL, True),
    "log_queries": (_BOOL, True),
    # accepted: no effect on skipidx's answers or pruning
    "min_insert_block_size_rows": (_UINT, 0),
    "min_insert_block_size_bytes": (_UINT, 0),
    "max_insert_block_size": (_UINT, 0),
    "mutations_sync": (_UINT, 0),
    "alter_sync": (_UINT, 1),
    "allow_experimental_analyzer": (_BOOL, True),
    "enable_analyzer": (_BOOL, True),
    "allow_suspicious_low_cardinality_types": (_BOOL, False),
    "allow_experimental_full_text_index": (_BOOL, False),
    "allow_experimental_inverted_index": (_BOOL, False),
    "enable_full_text_index": (_BOOL, True),
    "optimize_trivial_count_query": (_BOOL, True),
    "optimize_use_implicit_projections": (_BOOL, True),
    "optimize_use_projections": (_BOOL, True),
    "use_query_cache": (_BOOL, False),
    "use_uncompressed_cache": (_BOOL, False),
    "send_logs_level": (_STR, "fatal"),
    "max_memory_usage": (_UINT, 0),
    "merge_tree_min_rows_for_concurrent_read": (_UINT, 0),
    "merge_tree_min_bytes_for_concurrent_read": (_UINT, 0),
    "merge_tree_read_split_ranges_into_intersecting_and_non_intersecting_injection_probability": (_FLOAT, 0.0),
    "use_skip_indexes_if_final": (_BOOL, True),
    "secondary_indices_enable_bulk_filtering": (_BOOL, True),
    "query_plan_optimize_prewhere": (_BOOL, True),
    "optimize_read_in_order": (_BOOL, True),
    "allow_experimental_parallel_reading_from_replicas": (_UINT, 0),
    "enable_parallel_replicas": (_UINT, 0),
    "parallel_replicas_local_plan": (_BOOL, True),
    "use_index_for_in_with_subqueries": (_BOOL, True),
    "transform_null_in": (_BOOL, False),
    "exclude_deleted_rows_for_part_size_in_merge": (_BOOL, False),
    "materialize_skip_indexes_on_insert": (_BOOL, True),
    "output_format_pretty_color": (_UINT, 0),
    "output_format_pretty_row_numbers": (_BOOL, False),
    "input_format_parallel_parsing": (_BOOL, True),
    "output_format_parallel_formatting": (_BOOL, True),
    "distributed_product_mode": (_STR, "deny"),
    "optimize_skip_unused_shards": (_BOOL, False),
    "prefer_localhost_replica": (_BOOL, True),
    "log_comment": (_STR, ""),
    "max_execution_time": (_FLOAT, 0.0),
    "timeout_before_checking_execution_speed": (_FLOAT, 0.0),
}

#: The settings with an effect in skipidx (the rest of QUERY_SETTINGS is accepted only).
EFFECTIVE = ("use_skip_indexes", "force_data_skipping_indices", "ignore_data_skipping_indices",
             "use_skip_indexes_for_disjunctions", "force_primary_key", "max_threads", "max_rows_to_read",
             "max_bytes_to_read", "max_block_size", "optimize_move_to_prewhere", "max_result_rows",
             "max_insert_threads")


#: Accepted settings whose other value would change answers: only the default is taken.
ONLY_DEFAULT = frozenset({"transform_null_in"})


_err = BindError.at   # (the error at the node's position)


def setting_value(name: str, value: Any, node: Any = None) -> Any:
    """`value` (a Python value or a Literal) converted to the type of setting `name`."""
    if name not in QUERY_SETTINGS:
        raise _err(f"unknown setting '{name}'{did_you_mean(name, QUERY_SETTINGS)}", node)
    kind, _default = QUERY_SETTINGS[name]
    if isinstance(value, A.Literal):
        value = value.value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if kind == _BOOL:
        if isinstance(value, bool):
            out = value
        elif isinstance(value, int) and value in (0, 1):
            out = bool(value)
        elif isinstance(value, str) and value.lower() in ("0", "1", "true", "false"):
            out = value.lower() in ("1", "true")
        else:
            raise _err(f"setting {name} must be 0 or 1 (or true/false), got {value!r}", node)
        if name in ONLY_DEFAULT and out != QUERY_SETTINGS[name][1]:
            raise _err(f"setting {name} = {int(out)} is not supported: skipidx answers as with "
                       f"{int(QUERY_SETTINGS[name][1])}", node)
        return out
    if kind == _UINT:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if not isinstance(value, int) or value < 0:
            raise _err(f"setting {name} must be a non-negative integer, got {value!r}", node)
        return value
    if kind == _FLOAT:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise _err(f"setting {name} must be a number, got {value!r}", node)
    if value is None:
        raise _err(f"setting {name} must be a string, got NULL", node)
    return str(value)


@dataclass(frozen=True)
class QuerySettings:
    """The settings of one statement: the session's, overridden by its own SETTINGS."""

    values: Mapping[str, Any]

    def get(self, name: str) -> Any:
        return self.values.get(name, QUERY_SETTINGS[name][1])

    def index_names(self, name: str) -> list[str]:
        """A comma-separated index list setting (force_/ignore_data_skipping_indices) as names."""
        text = self.get(name)
        return [x.strip().strip("`\"") for x in text.split(",") if x.strip()]


def resolve_settings(session: Mapping[str, Any], items: Iterable[A.KeywordArg]) -> QuerySettings:
    """Session settings overridden by a statement's ``SETTINGS`` items (validated)."""
    values = dict(session)
    for kv in items:
        if isinstance(kv.value, A.Param):
            raise _err(f"setting {kv.name}: query parameter '{kv.value.name}' was not bound", kv)
        values[kv.name] = setting_value(kv.name, kv.value, kv)
    return QuerySettings(values)


def check_known(name: str) -> None:
    if name not in QUERY_SETTINGS:
        raise SkipidxError(f"unknown setting '{name}'{did_you_mean(name, QUERY_SETTINGS)}")


class QueryLimitError(SkipidxError):
    """A query setting's limit or requirement that the query does not meet
    (ClickHouse's TOO_MANY_ROWS, TOO_MANY_BYTES, INDEX_NOT_USED); `code` is
    ClickHouse's error code."""

    def __init__(self, message: str, code: int, name: str) -> None:
        self.code = code
        self.code_name = name
        super().__init__(f"{message} ({name})")


def _quantity(n: float) -> str:
    """ClickHouse's formatReadableQuantity."""
    units = ["", " thousand", " million", " billion", " trillion", " quadrillion"]
    i = 0
    v = float(n)
    while abs(v) >= 1000 and i < len(units) - 1:
        v /= 1000
        i += 1
    return f"{v:.2f}{units[i]}"


def result_rows_exceeded(limit: int, rows: int) -> QueryLimitError:
    """ClickHouse's max_result_rows error."""
    return QueryLimitError(f"Limit for result exceeded, max rows: {_quantity(limit)}, "
                           f"current rows: {_quantity(rows)}", 396, "TOO_MANY_ROWS_OR_BYTES")
