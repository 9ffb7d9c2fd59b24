"""Arrow schemas and columns as Spark takes them (shared by the MergeTree and external readers)."""
from __future__ import annotations

from typing import Any

import pyarrow as pa


def spark_arrow_schema(meta: Any) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    from skipidx.apps.spark.filters import spark_schema_of

    return to_arrow_schema(spark_schema_of(meta), timezone="UTC")


def to_spark(t: pa.Table, schema: pa.Schema) -> pa.Table:
    """Columns cast to the Arrow types Spark expects (uint8 -> int16, uint64 ->
    decimal(20,0), timestamp[s] -> timestamp[us, UTC], ...); all exact."""
    arrays = []
    for f in schema:
        c = t.column(f.name)
        arrays.append(c if c.type == f.type else c.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
