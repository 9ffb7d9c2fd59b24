"""Markdown tables and paper figures of a filter-zoo run (`skipidx bench zoo`)."""
from __future__ import annotations

import math
import os
from typing import Sequence

import numpy as np

from skipidx.apps.research.report import markdown_table

FAMILY_STYLE = {
    "sbbf per granule": ("tab:blue", "o"), "sbbf fixed": ("tab:orange", "s"),
    "classic bloom": ("tab:green", "^"), "xor / binary fuse": ("tab:red", "D"),
    "exact sets": ("tab:purple", "P"), "text index": ("tab:brown", "X"),
}


def equal_bytes_table(rows: Sequence[dict]) -> list[list]:
    """Per corpus and byte budget (the per-granule SBBF's bytes at fpp 0.1, 0.01, 0.001): the best
    config of each family within the budget (+2 %), and the family that keeps the fewest granules."""
    out = []
    for corpus in dict.fromkeys(r["corpus"] for r in rows):
        rs = [r for r in rows if r["corpus"] == corpus]
        budgets = [r for r in rs if r["filter"].startswith("sbbf exact fpp=")]
        for b in budgets:
            cap = b["bytes"] * 1.02
            best = {}
            for r in rs:
                if r["bytes"] <= cap and (r["family"] not in best or r["kept"] < best[r["family"]]["kept"]):
                    best[r["family"]] = r
            win = min(best.values(), key=lambda r: (r["kept"], r["bytes"]))
            cells = "; ".join(f"{f}: {r['kept']} ({r['filter']})" for f, r in best.items())
            out.append([corpus, b["bytes"], b["ideal"], win["family"], win["filter"], win["kept"], cells])
    return out


def zoo_markdown(rows: Sequence[dict], corpora_desc: dict, method: str) -> str:
    md = ["# Filter zoo: per-granule membership filters on the same granules", "", method, "", "## Corpora", ""]
    md += [f"- **{k}**: {v}" for k, v in corpora_desc.items()]
    md += ["", "## All filters", "",
           markdown_table(["corpus", "filter", "bytes", "bits/key", "build ms", "probe ms", "kept", "ideal",
                           "kept/ideal", "FPP measured", "FPP analytic", "CI low", "CI high"],
                          [[r["corpus"], r["filter"], r["bytes"], r["bits_per_key"], 1e3 * r["build_s"],
                            1e3 * r["probe_s"], r["kept"], r["ideal"], r["kept_over_ideal"], r["fpp_measured"],
                            r["fpp_analytic"], r["fpp_ci_lo"], r["fpp_ci_hi"]] for r in rows]),
           "", "## At equal bytes: which filter keeps the fewest granules", "",
           "Budget = the bytes of the per-granule SBBF (exact rule) at fpp 0.1 / 0.01 / 0.001; each family's "
           "best configuration within the budget (+2 %); the winner keeps the fewest granules (ties: fewer "
           "bytes).", "",
           markdown_table(["corpus", "budget bytes", "ideal", "winner family", "winner", "kept",
                           "kept per family within budget"], equal_bytes_table(rows))]
    return "\n".join(md) + "\n"


def _save(fig, out_dir: str, stem: str) -> list[str]:
    paths = []
    for ext in ("png", "svg"):
        p = os.path.join(out_dir, f"{stem}.{ext}")
        fig.savefig(p, dpi=150, bbox_inches="tight")
        paths.append(p)
    return paths


def _legend(fig, axes):
    handles, labels = {}, {}
    for ax in np.ravel(axes):
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=min(4, len(handles)),
               bbox_to_anchor=(0.5, -0.02), frameon=False, fontsize=8)


def zoo_plots(rows: Sequence[dict], out_dir: str, method: str) -> list[str]:
    import textwrap

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpora = list(dict.fromkeys(r["corpus"] for r in rows))
    paths: list[str] = []
    method = "\n".join(textwrap.wrap("Method: " + method, 150 if len(corpora) > 2 else 110))

    # 1. bytes (bits per key) vs kept / ideal
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.6 * len(corpora), 4.2), sharex=True, sharey=True,
                             squeeze=False)
    for ax, c in zip(axes[0], corpora):
        for fam, (col, mk) in FAMILY_STYLE.items():
            rs = sorted((r for r in rows if r["corpus"] == c and r["family"] == fam), key=lambda r: r["bytes"])
            if rs:
                ax.plot([r["bits_per_key"] for r in rs], [r["kept_over_ideal"] for r in rs], marker=mk, color=col,
                        linestyle="-" if fam != "text index" else "none", label=fam, alpha=0.85)
        ax.set_xlim(left=0)
        ax.set_title(c, fontsize=10)
        ax.set_xlabel("index bytes per distinct (granule, token) key, bits")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("granules kept / ideal (1 = exact)")
    _legend(fig, axes)
    fig.suptitle("Which filter keeps the fewest granules for its bytes? (hasToken of present tokens)\n" + method,
                 fontsize=8.5)
    fig.tight_layout(rect=(0, 0.08, 1, 0.93))
    paths += _save(fig, out_dir, "zoo_bytes_vs_kept")
    plt.close(fig)

    # 2. FPP vs bits per key against the analytic curves
    from skipidx.core.sbbf import SBBF

    fig, axes = plt.subplots(1, len(corpora), figsize=(4.6 * len(corpora), 4.2), sharex=True, sharey=True,
                             squeeze=False)
    b = np.linspace(2, 30, 120)
    n_ref = 2048
    sbbf_curve = [SBBF.fpp_estimate(max(32, int(round(x * n_ref / 8 / 32)) * 32), n_ref) for x in b]
    k_opt = np.maximum(1, np.round(b * math.log(2)))
    classic_curve = (1 - np.exp(-k_opt / b)) ** k_opt
    for ax, c in zip(axes[0], corpora):
        ax.plot(b, sbbf_curve, color="tab:blue", lw=1, ls="--", label="analytic: SBBF (Putze, 2048 keys)")
        ax.plot(b, classic_curve, color="tab:green", lw=1, ls=":", label="analytic: classic Bloom, k = b ln 2")
        ax.axhline(2 ** -8, color="tab:red", lw=0.8, ls="-.", label="analytic: 8-bit xor / fuse (2^-8)")
        ax.axhline(2 ** -16, color="tab:red", lw=0.8, ls=(0, (1, 3)), label="analytic: 16-bit fuse (2^-16)")
        for fam, (col, mk) in FAMILY_STYLE.items():
            rs = [r for r in rows if r["corpus"] == c and r["family"] == fam and r["absent_fp"] > 0]
            if rs:
                x = np.array([r["bits_per_key"] for r in rs])
                y = np.array([r["fpp_measured"] for r in rs])
                err = np.array([[r["fpp_measured"] - r["fpp_ci_lo"] for r in rs],
                                [r["fpp_ci_hi"] - r["fpp_measured"] for r in rs]])
                ax.errorbar(x, y, yerr=err, fmt=mk, color=col, ms=5, capsize=2, label=f"measured: {fam}")
        ax.set_yscale("log")
        ax.set_xlim(2, 32)
        ax.set_title(c, fontsize=10)
        ax.set_xlabel("bits per distinct key")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("false-positive rate on absent tokens (99.9 % Wilson CI)")
    _legend(fig, axes)
    fig.suptitle("Measured FPP vs bits per key against the analytic curves\n" + method, fontsize=8.5)
    fig.tight_layout(rect=(0, 0.12, 1, 0.93))
    paths += _save(fig, out_dir, "zoo_fpp_vs_bits")
    plt.close(fig)

    # 3. build and probe cost
    fams = [f for f in FAMILY_STYLE if any(r["family"] == f for r in rows)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), squeeze=False)
    width = 0.8 / max(len(corpora), 1)
    for j, c in enumerate(corpora):
        cols = ["tab:gray", "tab:cyan", "tab:olive", "tab:pink"]
        bv, pv = [], []
        for f in fams:
            rs = [r for r in rows if r["corpus"] == c and r["family"] == f]
            keys = max(1.0, np.median([r["bytes"] * 8 / r["bits_per_key"] for r in rs if r["bits_per_key"] > 0]
                                      or [1.0]))
            bv.append(1e9 * np.median([r["build_s"] for r in rs]) / keys)
            pv.append(1e3 * np.median([r["probe_s"] for r in rs]))
        xs = np.arange(len(fams)) + (j - (len(corpora) - 1) / 2) * width
        axes[0][0].barh(xs, bv, height=width, color=cols[j % 4], label=c)
        axes[0][1].barh(xs, pv, height=width, color=cols[j % 4], label=c)
    for ax, lab in ((axes[0][0], "build, ns per distinct (granule, token) key (median over configs)"),
                    (axes[0][1], "probe, ms for all present-token queries over all granules\n(text index: whole SQL queries)")):
        ax.set_yticks(np.arange(len(fams)))
        ax.set_yticklabels(fams, fontsize=8)
        ax.set_xscale("log")
        ax.set_xlabel(lab, fontsize=8)
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0][1].set_yticklabels([])
    axes[0][0].legend(fontsize=8, loc="lower right", title="corpus", title_fontsize=8)
    fig.suptitle("Build and probe cost per filter family\n" + method, fontsize=8.5)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    paths += _save(fig, out_dir, "zoo_cost")
    plt.close(fig)
    return paths
