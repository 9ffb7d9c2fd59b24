"""One local[2] Spark session for every Spark test module of the skipidx source.

Import the fixture into a test module with ``from conftest_spark import spark``.
The session is created once per process and reused (JVM start-up costs tens of
seconds); if another module stopped it, the next request starts a new one.
"""
from __future__ import annotations

import os
import sys

import pytest

_SESSION = None


def get_spark():
    """The shared session (created on first use, recreated if someone stopped it)."""
    global _SESSION
    pyspark_sql = pytest.importorskip("pyspark.sql")
    if _SESSION is not None and _SESSION.sparkContext._jsc is not None:
        return _SESSION
    # Python workers must run this interpreter (it has skipidx installed)
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    _SESSION = (
        pyspark_sql.SparkSession.builder.master("local[2]")
        .appName("skipidx-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.python.worker.reuse", "true")
        .getOrCreate()
    )
    _SESSION.sparkContext.setLogLevel("ERROR")
    import skipidx.apps.spark

    skipidx.apps.spark.register(_SESSION)
    return _SESSION


@pytest.fixture()
def spark():
    """A registered local[2] session (``format("skipidx")`` available)."""
    return get_spark()
