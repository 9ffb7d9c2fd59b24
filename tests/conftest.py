"""Fixtures every test module shares: one Spark session, one chDB oracle, the demo table.

* ``spark`` -- a local[2] Spark session with the skipidx source registered,
  created once per process (JVM start-up costs tens of seconds) and created
  again if a test stopped it; :func:`get_spark` for module-scoped fixtures.
* ``chdb`` -- the process's chDB session (:mod:`skipidx.apps.research.chdb_session`:
  chDB allows one embedded server per process, and the research bench uses
  the same one); skipped where chDB is not installed.
* ``demo_db`` -- the demo dataset (:data:`DEMO_ROWS` seeded log rows,
  :func:`skipidx.apps.demo.build_demo_table`) in a database, built once per
  test session.
"""
from __future__ import annotations

import os
import sys

import pytest

#: Rows and seed of the demo table (what ``skipidx demo`` loads).
DEMO_ROWS = 1_000_000
DEMO_SEED = 42

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


@pytest.fixture(scope="session")
def chdb():
    """The chDB oracle: ``chdb.query(sql, fmt)``, ``chdb.scratch_database(prefix)``."""
    pytest.importorskip("chdb")
    from skipidx.apps.research import chdb_session

    return chdb_session


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory):
    """The demo table ``logs`` (DEMO_ROWS rows, seed DEMO_SEED) in a database of its own."""
    import skipidx
    from skipidx.apps.demo import build_demo_table

    db = skipidx.connect(str(tmp_path_factory.mktemp("demo") / "db"))
    build_demo_table(db, DEMO_ROWS, DEMO_SEED, quiet=True)
    yield db
    db.close()
