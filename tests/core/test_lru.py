"""skipidx.core.lru.LRU: the bounded map behind the process-wide caches."""
from __future__ import annotations

import threading

from skipidx.core.lru import LRU


def test_evicts_the_least_recently_used():
    c = LRU(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1, "a hit marks 'a' most recently used"
    c.put("c", 3)
    assert (c.get("a"), c.get("b"), c.get("c")) == (1, None, 3), "'b' was the least recently used"
    assert len(c) == 2


def test_a_byte_bound_evicts_by_the_sizes_put_says():
    c = LRU(100, max_bytes=10)
    c.put("a", 1, 4)
    c.put("b", 2, 4)
    c.get("a")
    c.put("c", 3, 4)              # 12 bytes: 'b' (least recently used) goes
    assert (c.get("a"), c.get("b"), c.get("c")) == (1, None, 3)
    c.put("a", 9, 1)              # replacing an entry counts its new size only
    c.put("d", 4, 5)
    assert (c.get("a"), c.get("c"), c.get("d")) == (9, 3, 4)
    c.put("big", 5, 11)           # larger than the bound: kept by nothing
    assert c.get("big") is None and len(c) == 0
    c.put("e", 6, 3)
    c.clear()
    c.put("f", 7, 10)
    assert c.get("f") == 7, "clear() forgets the sizes too"


def test_size_can_shrink_to_nothing_and_clear_empties():
    c = LRU(4)
    c.put(1, "x")
    c.size = 0
    c.put(2, "y")
    assert len(c) == 0 and c.get(1) is None, "size 0 keeps nothing"
    c.size = 4
    c.put(3, "z")
    c.clear()
    assert c.get(3) is None and len(c) == 0


def test_concurrent_puts_stay_bounded():
    c = LRU(64)

    def work(base: int) -> None:
        for i in range(2000):
            c.put((base, i), i)
            c.get((base, i - 1))

    threads = [threading.Thread(target=work, args=(b,)) for b in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(c) == 64, f"bounded to 64 entries, holds {len(c)}"


def test_named_caches_join_the_registry_with_their_bounds():
    import skipidx.engine  # noqa: F401  (import skipidx is lazy; load the modules that own caches)
    import skipidx.indexes.bloom  # noqa: F401
    import skipidx.store.commit  # noqa: F401
    import skipidx.store.part  # noqa: F401
    from skipidx.core import lru

    c = lru.LRU(3, "test.registry", "what the test keeps")
    c.put("a", 1)
    assert lru.caches()["test.registry"] == (1, 3, "what the test keeps")
    assert {"store.footers", "store.manifests", "store.states", "indexes.sbbf_conditions"} <= set(lru.caches()), \
        "the store's and the indexes' caches are registered once their modules load"
    lru.clear_caches()
    assert len(c) == 0 and c.get("a") is None
    assert LRU(2).name is None and "None" not in lru.caches(), "an unnamed LRU stays out of the registry"


def test_the_docstring_table_states_every_cache_and_its_bound():
    import re

    import skipidx.engine  # noqa: F401  (every built-in cache module)
    import skipidx.store.external  # noqa: F401
    import skipidx.store.lake  # noqa: F401
    import skipidx.engine.system_tables  # noqa: F401  (loaded lazily by the engine)
    import skipidx.expr.evaluate  # noqa: F401  (loaded lazily too)
    from skipidx.core import lru

    rows = {m.group(1): int(m.group(2)) for m in re.finditer(r"^([a-z_]+\.[a-z_]+)\s+(\d+)\s", lru.__doc__, re.M)}
    assert rows == {name: bound for name, (_n, bound, _what) in lru.caches().items()}


def test_a_database_close_can_clear_the_process_caches(tmp_path):
    import skipidx
    from skipidx.core.lru import caches

    db = skipidx.connect(str(tmp_path / "db"))
    db.sql("CREATE TABLE t (s String, INDEX i s TYPE bloom_filter GRANULARITY 1) ENGINE = MergeTree ORDER BY s")
    db.sql("INSERT INTO t VALUES ('a'), ('b')")
    assert db.sql("SELECT count() FROM t WHERE s = 'a'").fetchall() == [(1,)]
    assert sum(n for n, _b, _w in caches().values()) > 0
    db.close(clear_caches=True)
    assert sum(n for n, _b, _w in caches().values()) == 0
