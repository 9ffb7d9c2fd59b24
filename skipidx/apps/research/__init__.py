"""The research bench: measure and compare skipping indexes on real data, against ClickHouse.

Commands (``skipidx bench ...`` / ``skipidx advise ...`` dispatch to `cli.bench_main` and
`cli.advise_main`)::

    skipidx bench fpp [--quick]                          # fpp.py: the Parquet spec's sizing table,
                                                         # Wilson intervals, ClickHouse's classic filter
    skipidx bench indexes DATA.parquet --column msg \\
        [--queries FILE] [--quick] [--engine]            # indexes.py: build candidates, measure pruning;
                                                         # chdb_compare.py: the same DDL in ClickHouse;
                                                         # engine_compare.py: the same DDL via skipidx.connect
    skipidx advise DATA.parquet --column msg --fpp 0.01  # advise.py: sizes from distinct counts

Modules: `querygen` (seeded WHERE clauses by family), `whereexpr` (the WHERE subset the bench
takes, read by the engine's parser and binder), `report` / `indexes_report` (markdown, JSON, PNG).
"""
