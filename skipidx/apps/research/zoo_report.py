"""Markdown tables and paper figures of a filter-zoo run (`skipidx bench zoo`).

Figures (PNG + SVG), one question each:

* ``zoo_equal_bytes``: at equal bytes, which filter keeps the fewest granules
  on each corpus (one panel per tokenizer and byte budget);
* ``zoo_bytes_vs_kept``: index bytes per key against granules kept / ideal;
* ``zoo_fpp_vs_bits``: measured FPP (99.9 % Wilson interval) against the
  analytic curves (the interval: Wilson, widened to the per-probe cluster
  interval where granules share false positives);
* ``zoo_cost``: build and probe cost per filter family.
"""
from __future__ import annotations

import math
import os
import textwrap
from typing import Sequence

import numpy as np

from skipidx.apps.research.report import markdown_table

FAMILY_STYLE = {
    "sbbf per granule": ("tab:blue", "o", "-"), "sbbf fixed": ("tab:orange", "s", "-"),
    "classic bloom": ("tab:green", "^", "-"), "xor / binary fuse": ("tab:red", "D", "none"),
    "exact sets": ("tab:purple", "P", "none"), "text index": ("tab:brown", "X", "none"),
    "chDB Bloom index": ("black", "v", "--"), "chDB text index": ("tab:gray", "*", "none"),
}
FPP_FAMILIES = ("sbbf per granule", "sbbf fixed", "classic bloom", "xor / binary fuse")
BUDGET_FPPS = (0.1, 0.01, 0.001)


def _order(rows: Sequence[dict], key: str) -> list:
    return list(dict.fromkeys(r[key] for r in rows))


def equal_bytes_table(rows: Sequence[dict]) -> list[list]:
    """Per corpus, tokenizer and byte budget (the per-granule SBBF's bytes, exact rule, at fpp 0.1,
    0.01, 0.001): each family's config keeping fewest granules within the budget (+2 %), and the
    winner (fewest kept; ties: fewer bytes). Rows: corpus, tokenizer, budget fpp, budget bytes,
    bits/key, ideal, winner family, winner config, winner kept, {family: row}."""
    out = []
    for corpus in _order(rows, "corpus"):
        for tok in _order([r for r in rows if r["corpus"] == corpus], "tokenizer"):
            rs = [r for r in rows if r["corpus"] == corpus and r["tokenizer"] == tok]
            for p in BUDGET_FPPS:
                b = next((r for r in rs if r["filter"] == f"sbbf exact fpp={p:g}"), None)
                if b is None:
                    continue
                cap = b["bytes"] * 1.02
                best: dict[str, dict] = {}
                for r in rs:
                    if r["bytes"] <= cap and (r["family"] not in best
                                              or (r["kept"], r["bytes"]) < (best[r["family"]]["kept"],
                                                                            best[r["family"]]["bytes"])):
                        best[r["family"]] = r
                win = min(best.values(), key=lambda r: (r["kept"], r["bytes"]))
                out.append([corpus, tok, p, b["bytes"], b["bits_per_key"], b["ideal"], win["family"], win["filter"],
                            win["kept"], best])
    return out


def answer_markdown(rows: Sequence[dict]) -> str:
    """The one table: per corpus and tokenizer, at each budget, the filter keeping fewest granules
    (kept / ideal), the runner-up, and ClickHouse's Bloom index at the same bytes."""
    cells: dict[tuple, dict] = {}
    for corpus, tok, p, _b, bpk, ideal, fam, filt, kept, best in equal_bytes_table(rows):
        others = sorted((r for f, r in best.items() if f != fam), key=lambda r: (r["kept"], r["bytes"]))
        ch = best.get("chDB Bloom index")
        txt = f"**{fam}** {kept / max(ideal, 1):.3f}"
        if others:
            txt += f"; {others[0]['family']} {others[0]['kept'] / max(ideal, 1):.3f}"
        if ch is not None and (not others or others[0] is not ch) and fam != "chDB Bloom index":
            txt += f"; chDB {ch['kept'] / max(ideal, 1):.3f}"
        cells[(corpus, tok, p)] = {"cell": f"{txt} ({bpk:.1f} b/key)", "ideal": ideal}
    table = []
    for corpus in _order(rows, "corpus"):
        for tok in _order([r for r in rows if r["corpus"] == corpus], "tokenizer"):
            got = [cells.get((corpus, tok, p)) for p in BUDGET_FPPS]
            if not any(got):
                continue
            ideal = next(g["ideal"] for g in got if g)
            table.append([corpus, tok, ideal] + [g["cell"] if g else "" for g in got])
    return markdown_table(["corpus", "queries' tokenizer", "ideal granules"] +
                          [f"budget = SBBF at fpp {p:g}" for p in BUDGET_FPPS], table, align="llr" + "l" * 3)


def zoo_markdown(rows: Sequence[dict], corpora_desc: dict, method: str) -> str:
    md = ["# Filter zoo: per-granule membership filters on the same granules", "", method, "", "## Corpora", ""]
    md += [f"- **{k}**: {v}" for k, v in corpora_desc.items()]
    md += ["", "## At equal bytes: which filter keeps the fewest granules", "",
           "Budget = the bytes of the per-granule SBBF (exact rule) at fpp 0.1 / 0.01 / 0.001 (bits per distinct "
           "(granule, token) key in brackets); every family's best configuration within the budget (+2 %). Cells: "
           "the winner's granules kept / ideal, the runner-up's, and ClickHouse's Bloom-filter index "
           "(tokenbf_v1 / ngrambf_v1 / sparse_grams at the same bytes per granule). Ideal = granules that hold a "
           "match (hasToken: the token; LIKE: a scan finds the substring), so for LIKE even exact per-granule "
           "gram sets keep more than the ideal; the text indexes (row postings) are far above these budgets and "
           "are listed below.", "", answer_markdown(rows), "",
           "## Text indexes (above every budget)", "",
           markdown_table(["corpus", "tokenizer", "index", "bytes", "bits/key", "kept", "ideal", "build s",
                           "ms / query"],
                          [[r["corpus"], r["tokenizer"], r["filter"], r["bytes"], r["bits_per_key"], r["kept"],
                            r["ideal"], r["build_s"], 1e3 * r["probe_s"] / max(r.get("queries") or 1, 1)]
                           for r in rows if r["family"] in ("text index", "chDB text index")]),
           "", "## All filters", "",
           markdown_table(["corpus", "tokenizer", "filter", "bytes", "bytes on disk", "bits/key", "build ms",
                           "probe ms", "kept", "ideal", "kept/ideal", "FPP measured", "FPP analytic", "CI low",
                           "CI high"],
                          [[r["corpus"], r["tokenizer"], r["filter"], r["bytes"],
                            r["bytes_compressed"] if r.get("bytes_compressed", -1) >= 0 else "",
                            r["bits_per_key"], 1e3 * r["build_s"], 1e3 * r["probe_s"], r["kept"], r["ideal"],
                            r["kept_over_ideal"], r["fpp_measured"] if r["absent_trials"] else "",
                            r["fpp_analytic"] if r["absent_trials"] else "",
                            r["fpp_ci_lo"] if r["absent_trials"] else "", r["fpp_ci_hi"] if r["absent_trials"] else ""]
                           for r in rows])]
    return "\n".join(md) + "\n"


def _save(fig, out_dir: str, stem: str) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(out_dir, f"{stem}.{ext}")
        fig.savefig(p, dpi=130, bbox_inches="tight")
        paths.append(p)
    return paths


def _legend(fig, axes, ncol: int = 4, y: float = 0.0):
    handles: dict = {}
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="upper center", ncol=min(ncol, len(handles)),
               bbox_to_anchor=(0.5, y), frameon=False, fontsize=9)


def _caption(fig, text: str, y: float, width: int) -> None:
    fig.text(0.01, y, "\n".join(textwrap.wrap(text, width)), ha="left", va="top", fontsize=8, color="0.25")


def zoo_plots(rows: Sequence[dict], out_dir: str, method: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpora = _order(rows, "corpus")
    toks = _order(rows, "tokenizer")
    paths: list[str] = []
    nc, nt = len(corpora), len(toks)
    method_txt = "Method: " + method

    # 0. the answer: at equal bytes, which filter keeps the fewest granules
    table = equal_bytes_table(rows)
    fams = [f for f in FAMILY_STYLE if any(f in t[9] for t in table) and f != "exact sets"]
    fig, axes = plt.subplots(nt, len(BUDGET_FPPS), figsize=(5.2 * len(BUDGET_FPPS), 2.9 * nt + 1.6),
                             sharex=True, sharey=True, squeeze=False)
    width = 0.8 / max(len(fams), 1)
    for i, tok in enumerate(toks):
        for j, p in enumerate(BUDGET_FPPS):
            ax = axes[i][j]
            bpks = []
            for k, fam in enumerate(fams):
                xs, ys = [], []
                for ci, c in enumerate(corpora):
                    t = next((t for t in table if t[0] == c and t[1] == tok and t[2] == p), None)
                    if t is not None and fam in t[9]:
                        xs.append(ci + (k - (len(fams) - 1) / 2) * width)
                        ys.append(100.0 * (t[9][fam]["kept"] / max(t[5], 1) - 1.0))
                        if k == 0:
                            bpks.append(t[4])
                if xs:
                    col, mk, _ = FAMILY_STYLE[fam]
                    ax.bar(xs, ys, width=width, color=col, label=fam, edgecolor="white", linewidth=0.3)
                    zero = [x for x, y in zip(xs, ys) if y == 0]
                    if zero:   # a bar of height 0 (kept = ideal) is drawn as a tick, so it is not read as absent
                        ax.scatter(zero, [0] * len(zero), marker="_", s=120, linewidths=3, color=col, zorder=3)
            for ci, c in enumerate(corpora):
                ex = [r for r in rows if r["corpus"] == c and r["tokenizer"] == tok and r["family"] == "exact sets"]
                if ex:
                    y = 100.0 * (ex[0]["kept_over_ideal"] - 1.0)
                    ax.hlines(y, ci - 0.45, ci + 0.45, colors="tab:purple", linestyles=":", lw=1.5,
                              label="floor: exact per-granule sets (64 bits/key)")
            ax.set_xticks(range(nc))
            ax.set_xticklabels(corpora, fontsize=8)
            ax.grid(True, axis="y", alpha=0.3)
            ax.set_yscale("symlog", linthresh=1.0)
            bp = f", ~{np.median(bpks):.1f} bits/key" if bpks else ""
            ax.set_title(f"{tok}: budget = SBBF at fpp {p:g}{bp}", fontsize=9)
            if j == 0:
                ax.set_ylabel("granules kept over ideal, %\n(lower is better; symlog)", fontsize=8)
    fig.suptitle("At equal bytes, which filter keeps the fewest granules? (each family's best configuration "
                 "within the budget; no bar: none fits)", fontsize=11)
    fig.tight_layout(rect=(0, 1.25 / (2.9 * nt + 1.6), 1, 0.97))
    _legend(fig, axes, ncol=6, y=1.05 / (2.9 * nt + 1.6))
    _caption(fig, method_txt, 0.55 / (2.9 * nt + 1.6), 190)
    paths += _save(fig, out_dir, "zoo_equal_bytes")
    plt.close(fig)

    # 1. bytes (bits per key) vs kept / ideal
    h = 2.9 * nt + 1.6
    fig, axes = plt.subplots(nt, nc, figsize=(4.2 * nc, h), sharex=True, sharey=True, squeeze=False)
    for i, tok in enumerate(toks):
        for j, c in enumerate(corpora):
            ax = axes[i][j]
            for fam, (col, mk, ls) in FAMILY_STYLE.items():
                rs = sorted((r for r in rows if r["corpus"] == c and r["tokenizer"] == tok and r["family"] == fam),
                            key=lambda r: r["bytes"])
                if rs:
                    ax.plot([r["bits_per_key"] for r in rs], [r["kept_over_ideal"] for r in rs], marker=mk,
                            color=col, linestyle=ls, label=fam, alpha=0.85, ms=5, lw=1)
            ax.set_xscale("log")
            ax.grid(True, which="both", alpha=0.3)
            ax.set_title(f"{c} / {tok}", fontsize=9)
            if i == nt - 1:
                ax.set_xlabel("index bits per distinct (granule, token) key", fontsize=8)
            if j == 0:
                ax.set_ylabel("granules kept / ideal", fontsize=8)
    fig.suptitle("Index bytes against granules kept (1 = ideal); rows: the queries' tokenizer (token: hasToken, "
                 "others: LIKE '%substring%')", fontsize=11)
    fig.tight_layout(rect=(0, 1.25 / h, 1, 0.97))
    _legend(fig, axes, ncol=8 if nc > 2 else 4, y=1.05 / h)
    _caption(fig, method_txt + ". chDB Bloom index: tokenbf_v1 / ngrambf_v1 / sparse_grams at the budgets' bytes "
             "per granule (uncompressed); text indexes: bytes on disk.", 0.6 / h, 40 * nc + 20)
    paths += _save(fig, out_dir, "zoo_bytes_vs_kept")
    plt.close(fig)

    # 2. FPP vs bits per key against the analytic curves
    from skipidx.core.sbbf import SBBF

    fig, axes = plt.subplots(nt, nc, figsize=(4.2 * nc, h), sharex=True, sharey=True, squeeze=False)
    b = np.linspace(2, 32, 121)
    n_ref = 2048
    sbbf_curve = [SBBF.fpp_estimate(max(32, int(round(x * n_ref / 8 / 32)) * 32), n_ref) for x in b]
    k_opt = np.maximum(1, np.round(b * math.log(2)))
    classic_curve = (1 - np.exp(-k_opt / b)) ** k_opt
    for i, tok in enumerate(toks):
        for j, c in enumerate(corpora):
            ax = axes[i][j]
            ax.plot(b, sbbf_curve, color="tab:blue", lw=1, ls="--", label="analytic: SBBF (Putze, 2048 keys)")
            ax.plot(b, classic_curve, color="tab:green", lw=1, ls=":", label="analytic: classic Bloom, k = b ln 2")
            ax.axhline(2 ** -8, color="tab:red", lw=0.8, ls="-.", label="analytic: 8-bit xor / fuse (2^-8)")
            ax.axhline(2 ** -16, color="tab:red", lw=0.8, ls=(0, (1, 3)), label="analytic: 16-bit fuse (2^-16)")
            for fam in FPP_FAMILIES:
                col, mk, _ = FAMILY_STYLE[fam]
                rs = [r for r in rows if r["corpus"] == c and r["tokenizer"] == tok and r["family"] == fam
                      and r["absent_fp"] > 0]
                if rs:
                    x = np.array([r["bits_per_key"] for r in rs])
                    y = np.array([r["fpp_measured"] for r in rs])
                    err = np.array([[r["fpp_measured"] - r["fpp_ci_lo"] for r in rs],
                                    [r["fpp_ci_hi"] - r["fpp_measured"] for r in rs]])
                    ax.errorbar(x, y, yerr=err, fmt=mk, color=col, ms=4, capsize=2, label=f"measured: {fam}")
            ax.set_yscale("log")
            ax.set_xlim(2, 34)
            ax.set_ylim(1e-6, 0.5)
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(f"{c} / {tok}", fontsize=9)
            if i == nt - 1:
                ax.set_xlabel("bits per distinct key", fontsize=8)
            if j == 0:
                ax.set_ylabel("FPP on absent keys (99.9 %\ninterval, see zoo.fpp_interval)", fontsize=8)
    fig.suptitle("Measured false-positive rate against the analytic curves (a filter with no false positive "
                 "in the trials is not drawn: exact sets, most 16-bit fuse)", fontsize=11)
    fig.tight_layout(rect=(0, 1.35 / h, 1, 0.97))
    _legend(fig, axes, ncol=4, y=1.15 / h)
    _caption(fig, method_txt, 0.5 / h, 40 * nc + 20)
    paths += _save(fig, out_dir, "zoo_fpp_vs_bits")
    plt.close(fig)

    # 3. build and probe cost
    fams = [f for f in FAMILY_STYLE if any(r["family"] == f for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(13, 0.45 * len(fams) * max(nt, 1) ** 0.5 + 3.2), sharey=True,
                             squeeze=False)
    width = 0.8 / max(nt, 1)
    tcols = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:olive"]
    for j, tok in enumerate(toks):
        bv, pv, berr, perr = [], [], [], []
        for f in fams:
            per_c_b, per_c_p = [], []
            for c in corpora:
                rs = [r for r in rows if r["corpus"] == c and r["tokenizer"] == tok and r["family"] == f]
                if not rs:
                    continue
                # exact sets are the shared sorted hashes (no build of their own); a text index whose
                # insert was not slower than the plain table's has no measurable build: not drawn
                b = [1e9 * r["build_s"] / max(r["bytes"] * 8 / r["bits_per_key"], 1.0) for r in rs
                     if r["bits_per_key"] > 0 and r["build_s"] > 0 and f != "exact sets"]
                if b:
                    per_c_b.append(float(np.median(b)))
                per_c_p.append(float(np.median([1e6 * r["probe_s"] / max(r.get("queries") or 1, 1) for r in rs])))
            for vals, out, err in ((per_c_b, bv, berr), (per_c_p, pv, perr)):
                if vals:
                    m = float(np.median(vals))
                    out.append(m)
                    err.append((m - min(vals), max(vals) - m))
                else:
                    out.append(np.nan)
                    err.append((0.0, 0.0))
        ys = np.arange(len(fams)) + (j - (nt - 1) / 2) * width
        axes[0][0].barh(ys, bv, height=width, color=tcols[j % len(tcols)], label=tok,
                        xerr=np.array(berr).T, error_kw={"lw": 0.7, "capsize": 1.5})
        axes[0][1].barh(ys, pv, height=width, color=tcols[j % len(tcols)], label=tok,
                        xerr=np.array(perr).T, error_kw={"lw": 0.7, "capsize": 1.5})
    for ax, lab in ((axes[0][0], "build, ns per distinct (granule, token) key"),
                    (axes[0][1], "probe, µs per query over all granules\n(text and chDB indexes: a whole "
                                 "SELECT count())")):
        ax.set_yticks(np.arange(len(fams)))
        ax.set_yticklabels(fams, fontsize=9)
        ax.set_xscale("log")
        ax.set_xlabel(lab, fontsize=9)
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0][0].invert_yaxis()
    fig.suptitle("Build and probe cost per filter family (bars: median over corpora of each corpus's median "
                 "over configurations; whiskers: min-max over corpora)", fontsize=10)
    hh = fig.get_size_inches()[1]
    fig.tight_layout(rect=(0, 0.95 / hh, 1, 0.93))
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), bbox_to_anchor=(0.5, 0.955), frameon=False,
               fontsize=9, title="queries' tokenizer", title_fontsize=8)
    _caption(fig, method_txt + ". Build: one build after a warm-up build; exact sets: not drawn (they are the "
             "shared sorted hashes); classic bloom: the zoo's numpy model of ClickHouse's filter (ClickHouse's own "
             "code is the chDB Bloom index); text index: insert time less a plain table's insert (not drawn when "
             "not larger); chDB: ALTER ... MATERIALIZE INDEX wall time.", 0.75 / hh, 200)
    paths += _save(fig, out_dir, "zoo_cost")
    plt.close(fig)
    return paths
