"""Tables and plots of a `bench indexes` run (markdown, JSON, PNG)."""
from __future__ import annotations

import os
from collections import OrderedDict

import numpy as np

from skipidx.apps.research.indexes import BenchResult
from skipidx.apps.research.report import fmt_cell, markdown_table, run_metadata, write_outputs


def _families(res: BenchResult) -> "OrderedDict[str, list[int]]":
    fam: OrderedDict[str, list[int]] = OrderedDict()
    for i, q in enumerate(res.queries):
        fam.setdefault(q.query.family, []).append(i)
    return fam


def _fp_rate(kept: int, ideal: int, total: int) -> float:
    neg = total - ideal
    return (kept - ideal) / neg if neg > 0 else 0.0


def _ch_by_mirror(res: BenchResult) -> dict[str, dict]:
    if not res.chdb:
        return {}
    return {x["mirrors"]: x for x in res.chdb.get("indexes", [])}


def head_to_head(res: BenchResult) -> list[dict]:
    """For every adaptive candidate: its kept granules per family vs the same-bytes fixed twin (and ClickHouse's)."""
    fam = _families(res)
    by_name = {r.candidate.name: r for r in res.candidates}
    ch = _ch_by_mirror(res)
    rows = []
    for r in res.candidates:
        c = r.candidate
        if c.kind != "same-bytes":
            continue
        a = by_name.get(c.matched_to)
        if a is None:
            continue
        x = ch.get(c.name)
        for f, idx in fam.items():
            ka = float(np.mean([a.queries[i].kept for i in idx]))
            kf = float(np.mean([r.queries[i].kept for i in idx]))
            kc = float(np.mean([x["kept"][i] for i in idx])) if x else None
            ideal = float(np.mean([res.queries[i].ideal for i in idx]))
            rows.append({"adaptive": a.candidate.name, "fixed": c.name, "clickhouse": x["name"] if x else None,
                         "clickhouse_type": x["type_sql"] if x else None,
                         "tokenizer": c.tok_label, "granularity": c.granularity, "fpp": a.candidate.fpp,
                         "bytes_adaptive": a.index_bytes, "bytes_fixed": r.index_bytes,
                         "bytes_clickhouse": x["bytes_uncompressed"] if x else None,
                         "family": f, "ideal": ideal, "kept_adaptive": ka, "kept_fixed": kf, "kept_clickhouse": kc})
    return rows


def indexes_markdown(res: BenchResult) -> str:
    fam = _families(res)
    total = res.granules
    out = [f"# bench indexes: `{res.column}` of {res.source or 'data'}", "",
           f"{res.rows:,} rows, index_granularity {res.index_granularity}, {total:,} granules; "
           f"{len(res.queries)} queries in {len(fam)} families. Granule counts are data granules "
           "(as ClickHouse's EXPLAIN counts them); *ideal* = granules holding a matching row (full scan); "
           "FP rate = (kept - ideal) / (granules - ideal).", ""]
    if res.chdb:
        if res.chdb.get("error"):
            out += [f"ClickHouse (chDB): failed: {res.chdb['error']}", ""]
        else:
            if res.chdb.get("parts", 1) != 1:
                out += [f"Note: ClickHouse's table kept {res.chdb['parts']} parts after OPTIMIZE FINAL, so its "
                        f"granules ({res.chdb.get('granules_total', '?')}) are cut at part boundaries, not exactly "
                        "the bench's.", ""]
            out += [f"ClickHouse (chDB {res.chdb.get('version')}): same data, {res.chdb.get('parts')} part(s), "
                    f"ideal from ClickHouse {'equals' if res.chdb.get('ideal_matches_scan') else 'DIFFERS from'} "
                    "the bench's full scan"
                    + (f"; all {len(res.chdb.get('indexes', []))} indexes built in one INSERT + merge "
                       f"({res.chdb.get('load_s', 0):.0f} s)." if res.chdb.get("build") == "insert" else "."), ""]
    if res.engine:
        e = res.engine
        out += [f"skipidx engine cross-check (`skipidx.connect`, {len(e['indexes'])} indexes in one table, insert "
                f"{e.get('insert_s', 0):.1f} s): every index's granules_after and every count() "
                + ("equal the bench's figures." if e.get("agrees_with_bench") else
                   f"DIFFER in {len(e['mismatches'])} places: " + "; ".join(e["mismatches"][:5])), ""]
    # Tokenizer stats.
    trows = []
    for label, st in res.tokenizer_stats.items():
        g1 = st.get("ndv_per_index_granule_g1")
        g4 = st.get("ndv_per_index_granule_g4")
        trows.append([label, g1["mean"] if g1 else None, g1["p95"] if g1 else None, g1["max"] if g1 else None,
                      g4["mean"] if g4 else None, st["hash_s"]])
    if trows:
        out += ["## Distinct tokens per index granule", "",
                markdown_table(["tokenizer", "mean (G1)", "p95 (G1)", "max (G1)", "mean (G4)", "tokenize+hash s"],
                               trows), ""]
    # Queries.
    qrows = [[i + 1, q.query.family, f"`{q.query.where if len(q.query.where) < 90 else q.query.where[:87] + '...'}`",
              q.matching_rows, q.ideal, q.scan_ms] for i, q in enumerate(res.queries)]
    out += ["## Queries", "", markdown_table(["#", "family", "WHERE", "rows", "ideal granules", "full scan ms"],
                                             qrows, align="rllrrr"), ""]
    # Candidate summary.
    ideal_sum = sum(q.ideal for q in res.queries)
    ch = _ch_by_mirror(res)
    srows = []
    for r in res.candidates:
        c = r.candidate
        kept = [q.kept for q in r.queries]
        fpr = np.mean([_fp_rate(q.kept, qi.ideal, total) for q, qi in zip(r.queries, res.queries)])
        srows.append([c.name, f"`{c.index_type_sql()}`", c.granularity, r.index_bytes, r.bytes_per_row, r.fill_mean,
                      r.ndv_mean, r.expected_fpp, getattr(r, "probe_fpp", None), r.build_s, sum(kept), float(fpr),
                      float(np.mean([q.prune_ms for q in r.queries])), float(np.mean([q.est_ms for q in r.queries]))])
        x = ch.get(c.name)
        if x:
            kx = x["kept"]
            fx = np.mean([_fp_rate(k, qi.ideal, total) for k, qi in zip(kx, res.queries)])
            srows.append([f"↳ ClickHouse {x['name']}", f"`{x['type_sql']}`", x["granularity"],
                          x["bytes_uncompressed"],
                          x["bytes_uncompressed"] / res.rows, None, None, None, None, x["build_s"], sum(kx), float(fx),
                          None,
                          float(np.mean(x["latency_ms"])) if x.get("latency_ms") else None])
    out += ["## Candidates", "",
            f"probe FPP = share of lookups of absent tokens ({getattr(res, 'absent_probes', 0):,} random hashes "
            "against every index granule) that answer maybe: the measured granule false-positive rate; "
            f"kept = granules kept summed over all queries (ideal sum: {ideal_sum:,}); est. query ms = "
            "pruning + full-scan time per granule x kept (ClickHouse rows: measured query latency); "
            "build s = tokenize + hash + size + insert (ClickHouse: MATERIALIZE INDEX).", "",
            markdown_table(["candidate", "TYPE", "GRAN", "index bytes", "bytes/row", "fill", "distinct/granule",
                            "expected FPP", "probe FPP", "build s", "kept", "FP granule rate", "prune ms",
                            "est. query ms"], srows, align="llrrrrrrrrrrrr"), ""]
    # Per family.
    names = list(fam)
    frows = []
    for r in res.candidates:
        frows.append([r.candidate.name, r.index_bytes] +
                     [float(np.mean([r.queries[i].kept for i in idx])) for idx in fam.values()])
        x = ch.get(r.candidate.name)
        if x:
            frows.append([f"↳ ClickHouse `{x['type_sql']}`", x["bytes_uncompressed"]] +
                         [float(np.mean([x["kept"][i] for i in idx])) for idx in fam.values()])
    hdr = ["candidate", "index bytes"] + [
        f"{f} (ideal {np.mean([res.queries[i].ideal for i in idx]):.3g})" for f, idx in fam.items()]
    out += ["## Granules kept per query family (mean over the family's queries)", "",
            markdown_table(hdr, frows, align="lr" + "r" * len(names)), ""]
    # Head to head.
    h2h = head_to_head(res)
    if h2h:
        rows = []
        wins = ties = losses = 0
        ch_wins = ch_ties = ch_losses = ch_n = 0
        for h in h2h:
            d = h["kept_adaptive"] - h["kept_fixed"]
            wins += d < 0
            ties += d == 0
            losses += d > 0
            if h["kept_clickhouse"] is not None:
                ch_n += 1
                dc = h["kept_adaptive"] - h["kept_clickhouse"]
                ch_wins += dc < 0
                ch_ties += dc == 0
                ch_losses += dc > 0
            rows.append([h["adaptive"], h["bytes_adaptive"], h["family"], h["ideal"], h["kept_adaptive"],
                         h["kept_fixed"], h["kept_clickhouse"],
                         "fewer" if d < 0 else ("same" if d == 0 else "MORE")])
        by_name = {r.candidate.name: r for r in res.candidates}
        # Per adaptive candidate: totals over all queries, and the expected FPP of both filters.
        summ = []
        for r in res.candidates:
            c = r.candidate
            if c.kind != "same-bytes" or c.matched_to not in by_name:
                continue
            a = by_name[c.matched_to]
            x = ch.get(c.name)
            ka = sum(q.kept for q in a.queries)
            kf = sum(q.kept for q in r.queries)
            kc = sum(x["kept"]) if x else None
            pa_, pf = getattr(a, "probe_fpp", None), getattr(r, "probe_fpp", None)
            ci_a, ci_f = getattr(a, "probe_ci", None), getattr(r, "probe_ci", None)
            if ci_a and ci_f and (ci_a[1] or ci_f[1]):
                probe_verdict = ("lower" if ci_a[1] < ci_f[0] else ("HIGHER" if ci_a[0] > ci_f[1] else "~same"))
            else:
                probe_verdict = None
            summ.append([a.candidate.name, a.index_bytes, a.expected_fpp, r.expected_fpp, pa_, pf, probe_verdict,
                         ka, kf, kc, "fewer" if ka < kf else ("same" if ka == kf else "MORE"),
                         None if kc is None else ("fewer" if ka < kc else ("same" if ka == kc else "MORE"))])
        # Per family: how often adaptive keeps fewer / the same / more granules.
        fam_rows = []
        for f in fam:
            hs = [h for h in h2h if h["family"] == f]
            d = [h["kept_adaptive"] - h["kept_fixed"] for h in hs]
            dc = [h["kept_adaptive"] - h["kept_clickhouse"] for h in hs if h["kept_clickhouse"] is not None]
            fam_rows.append([f, sum(x < 0 for x in d), sum(x == 0 for x in d), sum(x > 0 for x in d),
                             sum(x < 0 for x in dc) if dc else None, sum(x == 0 for x in dc) if dc else None,
                             sum(x > 0 for x in dc) if dc else None])
        out += ["## Adaptive sbbf vs fixed filters of the same bytes", "",
                "Each adaptive candidate against a fixed SBBF of the same total bytes (skipidx's tokenbf_v1/"
                "ngrambf_v1) and ClickHouse's classic tokenbf_v1/ngrambf_v1 of the same bytes (best-practice k). "
                "`_exact` candidates size each granule with the fewest blocks meeting the target (bench only); "
                "the others as the engine does (Arrow's power-of-two rule).", "",
                f"adaptive vs skipidx fixed: fewer granules in {wins}, the same in {ties}, more in {losses} of "
                f"{len(h2h)} (candidate, family) pairs.",
                (f"adaptive vs ClickHouse fixed: fewer in {ch_wins}, the same in {ch_ties}, more in {ch_losses} of "
                 f"{ch_n}." if ch_n else "ClickHouse columns: chDB not run."), "",
                markdown_table(["family", "fewer vs fixed", "same", "more", "fewer vs ClickHouse", "same", "more"],
                               fam_rows, align="lrrrrrr"), "",
                "Totals over all queries:", "",
                markdown_table(["adaptive", "bytes", "expected FPP adaptive", "expected FPP fixed",
                                "probe FPP adaptive", "probe FPP fixed", "probe FPP (99.9 % CIs)",
                                "kept adaptive", "kept fixed", "kept ClickHouse", "kept vs fixed",
                                "kept vs ClickHouse"], summ, align="lrrrrrlrrrll"), "",
                "Per family:", "",
                markdown_table(["adaptive", "bytes", "family", "ideal", "adaptive kept", "fixed same-bytes kept",
                                "ClickHouse same-bytes kept", "adaptive vs fixed"], rows, align="lrlrrrrl"), ""]
    return "\n".join(out) + "\n"


_TOK_COLORS = {"token": "C0", "ngram2": "C1", "ngram3": "C2", "ngram4": "C3", "ngram5": "C4", "value": "C5"}
_KIND_MARK = {"fixed": "o", "adaptive": "^", "same-bytes": "s", "clickhouse": "x"}


def _points(res: BenchResult, idx: list[int] | None = None):
    """(label, tokenizer, kind, granularity, bytes, kept) per candidate (+ ClickHouse)."""
    sel = range(len(res.queries)) if idx is None else idx
    pts = []
    for r in res.candidates:
        c = r.candidate
        pts.append((c.name, c.tok_label, c.kind, c.granularity, r.index_bytes,
                    float(np.sum([r.queries[i].kept for i in sel]))))
    for x in (res.chdb or {}).get("indexes", []):
        mir = next((r.candidate for r in res.candidates if r.candidate.name == x["mirrors"]), None)
        if mir is None:
            continue
        pts.append((x["name"], mir.tok_label, "clickhouse", x["granularity"], x["bytes_uncompressed"],
                    float(np.sum([x["kept"][i] for i in sel]))))
    return pts


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated in (bytes, kept), both minimized, sorted by bytes."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], points[i][1]))
    front, best = [], float("inf")
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def indexes_plots(res: BenchResult, out_dir: str, name: str = "indexes") -> list[str]:
    """``NAME_pareto.png`` (bytes vs granules kept, Pareto front) and ``NAME_families.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    paths = []
    pts = [p for p in _points(res) if p[4] > 0]
    ideal_sum = sum(q.ideal for q in res.queries)
    fig, ax = plt.subplots(figsize=(9, 6))
    for label, tok, kind, g, b, kept in pts:
        ax.scatter(b, kept, marker=_KIND_MARK[kind], color=_TOK_COLORS.get(tok, "k"),
                   facecolors=_TOK_COLORS.get(tok, "k") if g == 1 or kind == "clickhouse" else "none", s=36)
    front = pareto_front([(p[4], p[5]) for p in pts])
    fx = [pts[i][4] for i in front]
    fy = [pts[i][5] for i in front]
    ax.step(fx, fy, where="post", color="k", lw=1, alpha=0.6)
    for i in front:
        ax.annotate(pts[i][0], (pts[i][4], pts[i][5]), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.axhline(ideal_sum, color="grey", ls="--", lw=1)
    ax.axhline(res.granules * len(res.queries), color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("index bytes (all granules)")
    ax.set_ylabel(f"granules kept, summed over {len(res.queries)} queries")
    ax.set_title(f"{res.column}: index size vs pruning (Pareto front; dashed = ideal, dotted = no pruning)")
    handles = [Line2D([], [], color=c, marker="o", ls="", label=t) for t, c in _TOK_COLORS.items()
               if any(p[1] == t for p in pts)]
    handles += [Line2D([], [], color="k", marker=m, ls="", label=k, mfc="none" if k != "clickhouse" else None)
                for k, m in _KIND_MARK.items() if any(p[2] == k for p in pts)]
    handles.append(Line2D([], [], color="k", marker="o", ls="", mfc="none", label="hollow = GRANULARITY > 1"))
    ax.legend(handles=handles, fontsize=7, loc="upper right")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    p1 = os.path.join(out_dir, f"{name}_pareto.png")
    fig.savefig(p1, dpi=120)
    plt.close(fig)
    paths.append(p1)

    fam = _families(res)
    k = len(fam)
    cols = min(4, k)
    rows = (k + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4 * cols, 3.2 * rows), squeeze=False)
    for ax, (f, idx) in zip(axes.flat, fam.items()):
        for label, tok, kind, g, b, kept in _points(res, idx):
            if b <= 0:
                continue
            ax.scatter(b, kept / len(idx), marker=_KIND_MARK[kind], color=_TOK_COLORS.get(tok, "k"),
                       facecolors=_TOK_COLORS.get(tok, "k") if g == 1 or kind == "clickhouse" else "none", s=18)
        ax.axhline(np.mean([res.queries[i].ideal for i in idx]), color="grey", ls="--", lw=1)
        ax.set_xscale("log")
        ax.set_title(f, fontsize=9)
        ax.tick_params(labelsize=7)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[k:]:
        ax.axis("off")
    fig.supxlabel("index bytes")
    fig.supylabel("granules kept (mean per query)")
    fig.tight_layout()
    p2 = os.path.join(out_dir, f"{name}_families.png")
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    paths.append(p2)
    return paths


def write_indexes_report(res: BenchResult, out_dir: str, name: str = "indexes", plots: bool = True) -> dict:
    """Write NAME.md, NAME.json and the PNGs into out_dir; returns the paths."""
    md = indexes_markdown(res)
    data = {"meta": run_metadata(), **res.to_dict(), "head_to_head": head_to_head(res)}
    paths = write_outputs(out_dir, name, md, data)
    if plots:
        paths["png"] = indexes_plots(res, out_dir, name)
    return paths


__all__ = ["indexes_markdown", "indexes_plots", "write_indexes_report", "head_to_head", "pareto_front", "fmt_cell"]
