"""Figures and tables from a benchmark.sh output directory.

    python plot.py benchmark_out/cpu                 # PNGs, summary.md and summary.json into that directory
    python plot.py benchmark_out/cpu --out results   # ... or into another one

Reads every run JSON (schema 1 or 2) under DIR, skipping with a warning files that do not parse and
failure records, plus DIR/env_cost.json (the x-axis "environment cost") when it is there.
Which experiment a run belongs to is its `args.exp_name`, which benchmark.sh sets. Records of two
machines (two GPUs, or two CPU models) are never compared: each gets its own report, in OUT/machine-*.
The answer comes first: each variant's time as a multiple of jax_linen's, computed per block of runs
that ran back to back (same experiment, env, size, num_envs, seed), then the geometric mean over the
blocks with a 95% bootstrap interval and the verdict the interval allows; per (env, size) cell and per
size over its envs. Learning is compared with rliable: IQM, mean and probability of improvement, with
stratified-bootstrap intervals, and the wall-clock seconds to each environment's threshold.
Writes the figures, summary.md, and every ratio and learning statistic in summary.json.
"""

import argparse
import itertools
import json
import os
import re
import sys
import tempfile
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display needed, nothing opens a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from rliable import library as rly  # noqa: E402
from rliable import metrics as rly_metrics  # noqa: E402
from scipy import stats  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

VARIANTS = ["jax_linen", "jax_nnx", "jax_nnx+nocache", "jax_equinox", "linen_nojit", "torch", "torch_compile"]
SPEEDUP_VARIANTS = ["jax_linen", "jax_nnx", "jax_equinox", "linen_nojit", "torch", "torch_compile"]
SIZES = {(64, 64): "s", (256,) * 3: "m", (1024,) * 6: "l"}
EXPERIMENTS = ("overall", "sync", "compile", "scaling", "learn")
# (compiled, not compiled): the pairs of experiment (3)
COMPILE_PAIRS = [("jax_linen", "linen_nojit"), ("jax_nnx", "jax_nnx+nocache"), ("torch_compile", "torch")]
# Iteration 0 holds tracing and compilation; 1-7 may still warm up (caches, allocator); 8-end is steady.
WINDOWS = {"iteration 0": slice(0, 1), "iterations 1-7": slice(1, 8), "iterations 8-end": slice(8, None)}
# The learn preset runs each script's default config: its per-iteration times answer "do NNX and Equinox
# cost more than Linen, and than each other?" and "how much faster is the compiled torch iteration?".
# (A, B): time(B) / time(A).
LEARN_PAIRS = [("jax_linen", "jax_nnx"), ("jax_linen", "jax_equinox"), ("jax_nnx", "jax_equinox"), ("torch_compile", "torch")]
# A run "collapsed" when its final_return ends below this: CartPole-v1's default-config runs that reach 500
# and fall away (the tail in which torch_compile's runs were once seen to differ from eager torch's).
COLLAPSED = 425
COLORS = dict(zip(VARIANTS, plt.get_cmap("tab10").colors))
MARKERS = {"s": "o", "m": "s", "l": "^"}
FIGURES = [  # and one learn_ENV.png per environment of the learn runs
    "answer_env_cost.png",
    "answer_size.png",
    "duration.png",
    "speedup.png",
    "overhead.png",
    "rollout_update.png",
    "compilation.png",
    "scaling.png",
    "learning_curves.png",
    "learn.png",  # before one figure per environment: removed when found
]


@dataclass
class Run:
    experiment: str
    variant: str  # jax_nnx+nocache: nnx without cached_partial
    env: str
    size: str
    seed: int
    num_envs: int
    record: dict

    @property
    def total(self) -> float:
        return self.record["total_duration"]

    @property
    def steady(self) -> float:
        """Median iteration time after iteration 0 (compilation); iteration 0 if there is no other."""
        durations = self.record["iteration_durations"]
        return float(np.median(durations[1:] or durations))


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


# The keys plot.py reads, for each schema version it accepts; a record without one of them is skipped.
READS = {
    1: [
        "variant",
        "env_id",
        "hidden",
        "seed",
        "args",
        "device",
        "versions",
        "sync_timing",
        "env_steps",
        "setup_duration",
        "iteration_durations",
        "total_duration",
        "compiles_after_first_iteration",
        "episodic_return",
        "final_return",
    ],
}
READS[2] = READS[1] + ["cpu", "peak_host_memory_mb"]


def load_runs(directory: Path):
    """(runs, failures): the ok records under `directory`, and what was wrong with the other files."""
    runs, failures = [], []
    for path in sorted(directory.rglob("*.json")):
        if path.name.startswith(".") or path.name == "env_cost.json":  # .tmp-*: an atomic write in flight
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            warn(f"{path}: does not parse ({e}); skipped")
            failures.append(f"{path.relative_to(directory)}: does not parse")
            continue
        if not isinstance(record, dict) or record.get("status") != "ok" or record.get("schema_version") not in READS:
            reason = record.get("reason", "not a schema 1 or 2 run record") if isinstance(record, dict) else "not a record"
            warn(f"{path}: failure record or not a run ({reason}); skipped")
            failures.append(f"{path.relative_to(directory)}: {reason}")
            continue
        missing = [key for key in READS[record["schema_version"]] if key not in record]
        if missing or not isinstance(record["args"], dict) or "num_envs" not in record["args"]:
            reason = f"incomplete: no {(missing or ['args.num_envs'])[0]!r}"
            warn(f"{path}: {reason}; skipped")
            failures.append(f"{path.relative_to(directory)}: {reason}")
            continue
        args = record["args"]
        experiment = args.get("exp_name")
        if experiment not in EXPERIMENTS:  # a run not made by benchmark.sh
            experiment = "sync" if record["sync_timing"] else "overall"
        variant = record["variant"] + ("+nocache" if args.get("cached_partial") is False else "")
        hidden = tuple(record["hidden"])
        size = SIZES.get(hidden, "x".join(map(str, hidden)))
        runs.append(Run(experiment, variant, record["env_id"], size, record["seed"], args["num_envs"], record))
        if record["compiles_after_first_iteration"]:  # kept, but its iterations after 0 include compilation
            warn(f"{path}: compiled {record['compiles_after_first_iteration']} time(s) after iteration 0")
    return runs, failures


def group_by(runs, key):
    groups = defaultdict(list)
    for run in runs:
        groups[key(run)].append(run)
    return groups


def median_by(runs, key, value):
    """{key(run): median of value(run) over the runs sharing that key (the seeds)}."""
    return {k: float(np.median([value(r) for r in group])) for k, group in group_by(runs, key).items()}


def ordered(names, order):
    return sorted(set(names), key=lambda n: (order.index(n) if n in order else len(order), n))


def sizes_of(runs):
    return ordered([r.size for r in runs], list(MARKERS))


def table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def fmt(x, digits=3) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def save(fig, out: Path, name: str, legend_inches: float = 0.0) -> str:
    """Write fig as out/name (leaving legend_inches free at the top for a figure legend); its markdown."""
    for ax in fig.axes:
        plain_log_ticks(ax)
    fig.tight_layout(rect=(0, 0, 1, 1 - legend_inches / fig.get_figheight()))
    fig.savefig(out / name, dpi=110)
    plt.close(fig)
    return f"![{name}]({name})\n"


def size_axes(sizes):
    """A figure with one subplot per model size, side by side: (fig, axes[0][i] for size i)."""
    return plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.5), squeeze=False)


def plain(v) -> str:
    """A tick label: 0.5, 2, 30, 20k, 1.5M."""
    return f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k" if v >= 1e4 else f"{v:g}"


def plain_log_ticks(ax) -> None:
    """Plain tick labels (0.5, 2, 30) on log axes; minor ticks labelled over less than a decade (all of them) or
    a few decades (2s and 5s)."""
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() == "log":
            digits = "123456789" if high / low < 10 else "25" if high / low < 300 else ""
            axis.set_major_formatter(FuncFormatter(lambda v, _: plain(v)))
            axis.set_minor_formatter(FuncFormatter(lambda v, _, digits=digits: plain(v) if f"{v:e}"[0] in digits else ""))


# ---------------------------------------------------------------- statistics
# A ratio is computed per block: the runs of one experiment, env, size, num_envs and seed, which
# benchmark.sh runs back to back, so a slow spell of the machine falls on both sides of it. Over the
# blocks: the geometric mean, with a 95% bootstrap interval (resampling blocks, so pairs stay pairs).
CONFIDENCE = 0.95
MIN_BLOCKS = 3  # fewer gives no interval worth the name
BOOTSTRAP = dict(n_resamples=10_000, confidence_level=CONFIDENCE)
RLIABLE_REPS = 2_000  # rliable's stratified bootstrap: final returns
CURVE_REPS = 500  # ... and the interval bands of the learning curves, one interval per iteration
SEED = 0  # the same records give the same intervals
METRICS = {  # seconds, per run
    "steady": lambda r: r.steady,
    "iteration 0": lambda r: r.record["iteration_durations"][0],
    "total": lambda r: r.total,
    "rollout": lambda r: steady_part(r, "rollout_durations"),
    "update": lambda r: steady_part(r, "update_durations"),
}
SPEEDUP_METRICS = ("steady", "iteration 0", "total")
RATIO_TEXT = (
    "per block (same experiment, env, size, num_envs and seed), then the geometric mean over the "
    f"blocks with its {CONFIDENCE:.0%} bootstrap interval. Verdict: A or B faster when the interval "
    f"excludes 1, no difference detected when it contains 1, too few runs under {MIN_BLOCKS} blocks."
)


def steady_part(run, key) -> float:
    """Median of a --sync-timing part (rollout or update) over iterations 1-end."""
    durations = run.record[key]
    return float(np.median(durations[1:] or durations))


def block(run):
    return run.experiment, run.env, run.size, run.num_envs, run.seed


def paired_ratios(runs, a, b, metric):
    """time(b) / time(a) in every block where both ran."""
    times = {(r.variant, block(r)): METRICS[metric](r) for r in runs}
    return [times[b, k] / times[a, k] for (v, k) in times if v == a and (b, k) in times]


def interval(values, statistic) -> tuple[float, float]:
    """scipy's bootstrap interval (BCa) of statistic(values), or the percentile one where BCa is undefined."""
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():  # BCa of a sample this small may be undefined: nan, then percentile
            warnings.simplefilter("ignore")
            ci = stats.bootstrap((values,), statistic, method=method, rng=np.random.default_rng(SEED), **BOOTSTRAP)
        low, high = ci.confidence_interval
        if np.isfinite(low) and np.isfinite(high):
            return float(low), float(high)
    value = float(statistic(values))
    return value, value  # every resample gives the same value: all the values are equal


def ratio_verdict(low, high, n_blocks) -> str:
    if n_blocks < MIN_BLOCKS:
        return "too few runs"
    return "A faster" if low > 1 else "B faster" if high < 1 else "no difference detected"


def compare(runs, a, b, metric, size, env=None):
    """The ratio time(b) / time(a) for one size (and one env, or every env) and metric, as a summary.json row;
    None without a block."""
    runs = [r for r in runs if r.size == size and env in (None, r.env)]
    ratios = paired_ratios(runs, a, b, metric)
    if not ratios:
        return None
    logs = np.log(ratios)
    low = high = np.nan
    if len(ratios) >= MIN_BLOCKS:
        low, high = np.exp(interval(logs, np.mean))
    experiments = sorted({r.experiment for r in runs if r.variant in (a, b)})
    return {
        "a": a,
        "b": b,
        "metric": metric,
        "size": size,
        "env": env,
        "experiment": "+".join(experiments),
        "ratio": float(np.exp(logs.mean())),
        "ci_low": none_if_nan(low),
        "ci_high": none_if_nan(high),
        "n_blocks": len(ratios),
        "verdict": ratio_verdict(low, high, len(ratios)),
        "blocks": ratios,
    }


def none_if_nan(x):
    return None if x is None or not np.isfinite(x) else float(x)


def with_interval(value, low, high, digits=3) -> str:
    """'1.00 [0.97, 1.03]', or the value alone where there is no interval."""
    if low is None:
        return fmt(value, digits)
    return f"{fmt(value, digits)} [{fmt(low, digits)}, {fmt(high, digits)}]"


def ratio_table(rows) -> str:
    return table(
        ["size", "A", "B", "ratio [95% CI]", "blocks", "verdict"],
        [
            [r["size"], r["a"], r["b"], with_interval(r["ratio"], r["ci_low"], r["ci_high"]), r["n_blocks"], r["verdict"]]
            for r in rows
        ],
    )


def interval_bars(rows):
    """matplotlib's yerr for the rows' intervals: (below, above) each ratio, 0 where there is none. Clipped at 0:
    when every block has the same ratio, the interval and the mean may differ by a rounding either way."""
    bars = np.array(
        [[r["ratio"] - r["ci_low"], r["ci_high"] - r["ratio"]] if r["ci_low"] is not None else [0, 0] for r in rows]
    ).T.reshape(2, -1)
    return np.maximum(bars, 0)


def draw_ratios(ax, rows):
    """Per row: its blocks as dots, the geometric mean as a bar with its interval."""
    for i, r in enumerate(rows):
        ax.scatter(np.full(len(r["blocks"]), i), r["blocks"], s=10, color="tab:blue", alpha=0.5)
        ax.hlines(r["ratio"], i - 0.3, i + 0.3, color="k")
    ax.errorbar(range(len(rows)), [r["ratio"] for r in rows], yerr=interval_bars(rows), fmt="none", color="k", capsize=4)
    ax.axhline(1, color="gray", lw=0.8, ls="--")
    ax.set_xticks(range(len(rows)), [f"{r['a']}\nvs {r['b']}" for r in rows], rotation=90, fontsize=6)
    ax.set_xlim(-0.5, max(len(rows), 1) - 0.5)
    ax.set_yscale("log")


# ---------------------------------------------------------------- environment cost
def env_axis(directory: Path, envs):
    """({env: x}, label, log scale?): the env-step cost in microseconds, or the env's rank by name."""
    try:
        costs = json.loads((directory / "env_cost.json").read_text())
        x = {env: costs["envs"][env]["median_s"] * 1e6 for env in envs}
        return x, f"env cost: a vmapped env.step of {costs['num_envs']} envs, in lax.scan (us, median)", True
    except (OSError, ValueError, KeyError) as e:
        warn(f"no env cost for every environment ({e!r}); environments ordered by name instead")
        return {env: i for i, env in enumerate(sorted(envs))}, "environment (by name)", False


def name_envs(ax, x) -> None:
    """The environments' names along the x-axis, at their x positions."""
    for env, position in x.items():
        ax.annotate(
            env,
            (position, 0),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=6,
            xytext=(2, 3),
            textcoords="offset points",
            alpha=0.6,
        )


# ---------------------------------------------------------------- the answer: each variant's time over jax_linen's
REFERENCE = "jax_linen"
ENV_STYLES = ["-", "--", ":", "-."]  # one line style per environment where a figure has several


def against_reference(row) -> dict:
    """A compare() row of (REFERENCE, variant), as the answer reads it: the variant's time over the reference's."""
    verdict = {"A faster": f"slower than {REFERENCE}", "B faster": f"faster than {REFERENCE}"}
    kept = {k: v for k, v in row.items() if k not in ("a", "b")}
    return {"variant": row["b"], **kept, "verdict": verdict.get(row["verdict"], row["verdict"])}


def answer_rows(runs, metric="steady"):
    """Each variant's `metric` time over the reference's: per size over its environments (env None), and per
    (environment, size) cell."""
    rows = []
    variants = ordered({r.variant for r in runs} & set(SPEEDUP_VARIANTS) - {REFERENCE}, VARIANTS)
    for size in sizes_of(runs):
        envs = sorted({r.env for r in runs if r.size == size})
        for variant, env in itertools.product(variants, [None, *envs]):
            row = compare(runs, REFERENCE, variant, metric, size, env)
            if row:
                rows.append(against_reference(row))
    return rows


def draw_cells(ax, cells, x, variant, k, n, log, **line):
    """One variant's cells as points with their intervals at x[cell], nudged sideways (k of n) so that
    the variants' bars do not hide one another."""
    nudge = (lambda v: v * 1.04 ** (k - n / 2)) if log else (lambda v: v + 0.07 * (k - n / 2))
    xs = [nudge(x(r)) for r in cells]
    ax.errorbar(
        xs,
        [r["ratio"] for r in cells],
        yerr=interval_bars(cells),
        color=COLORS.get(variant),
        marker="o",
        ms=4,
        lw=0.8,
        capsize=2,
        **line,
    )


def plot_answer(runs, directory, out, answer):
    """The study's answer: each variant's steady iteration over jax_linen's against the environment's cost (one
    panel per size) and against the model's size, with the tables behind both."""
    rows = answer_rows(runs)
    if not rows:
        return []
    answer.extend(rows)
    cells = [r for r in rows if r["env"]]
    envs = sorted({r["env"] for r in cells})
    x, xlabel, log = env_axis(directory, envs)
    variants = ordered({r["variant"] for r in rows}, VARIANTS)
    sizes = [s for s in sizes_of(runs) if any(r["size"] == s for r in cells)]
    fig, axes = size_axes(sizes)
    for ax, size in zip(axes[0], sizes):
        for k, v in enumerate(variants):
            mine = sorted((r for r in cells if (r["variant"], r["size"]) == (v, size)), key=lambda r: x[r["env"]])
            if mine:
                draw_cells(ax, mine, lambda r: x[r["env"]], v, k, len(variants), log, label=v)
        ax.axhline(1, color=COLORS[REFERENCE], lw=1, ls="--", label=f"{REFERENCE} (1)")
        ax.set(xlabel=xlabel, ylabel=f"steady iteration, x {REFERENCE}'s time", title=f"size {size}")
        ax.set_yscale("log")
        shown = {e: x[e] for e in envs if any(r["env"] == e and r["size"] == size for r in cells)}
        if log:  # a decade at least, so that one environment's points spread little
            ax.set_xscale("log")
            ax.set_xlim(min(shown.values()) / 2, max(shown.values()) * 2)
        else:
            ax.set_xlim(-0.5, len(envs) - 0.5)
        name_envs(ax, shown)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=8)
    lines = [
        save(fig, out, "answer_env_cost.png", legend_inches=0.35),
        f"Each variant's steady iteration (median of iterations 1-end) as a multiple of {REFERENCE}'s, {RATIO_TEXT} "
        "Points: one environment each, with its interval; the dashed line: as fast as jax_linen.",
        "",
    ]
    # The size axis: the environments that ran at more than one size.
    params = {(r.env, r.size): r.record.get("param_count") for r in runs}
    size_envs = [
        e
        for e in envs
        if len({r["size"] for r in cells if r["env"] == e}) > 1
        and None not in [params.get((e, r["size"])) for r in cells if r["env"] == e]
    ][: len(ENV_STYLES)]
    if size_envs:
        fig, ax = plt.subplots(figsize=(8, 5))
        for k, v in enumerate(variants):
            for env, style in zip(size_envs, ENV_STYLES):
                mine = sorted((r for r in cells if (r["variant"], r["env"]) == (v, env)), key=lambda r: params[env, r["size"]])
                if mine:
                    draw_cells(ax, mine, lambda r, env=env: params[env, r["size"]], v, k, len(variants), True, ls=style)
        for (env, size), count in params.items():
            if env in size_envs:
                ax.annotate(
                    size,
                    (count, 0),
                    xycoords=("data", "axes fraction"),
                    xytext=(0, 3),
                    textcoords="offset points",
                    fontsize=7,
                    alpha=0.6,
                )
        ax.axhline(1, color=COLORS[REFERENCE], lw=1, ls="--")
        proxies = [plt.Line2D([], [], color=COLORS.get(v), marker="o", label=v) for v in variants]
        proxies += [plt.Line2D([], [], color="gray", ls=style, label=env) for env, style in zip(size_envs, ENV_STYLES)]
        proxies.append(plt.Line2D([], [], color=COLORS[REFERENCE], ls="--", label=f"{REFERENCE} (1)"))
        ax.legend(handles=proxies, fontsize=7, ncol=2)
        ax.set(
            xlabel="parameters (actor and critic; sizes s, m, l)",
            ylabel=f"steady iteration, x {REFERENCE}'s time",
            title="The gap as the model grows",
        )
        ax.set_xscale("log")
        ax.set_yscale("log")
        lines += [
            save(fig, out, "answer_size.png"),
            "The same ratios against the model's size, one line style per environment.",
            "",
        ]
    pooled = [r for r in rows if r["env"] is None]
    spread = {
        (r["variant"], r["size"]): [c["ratio"] for c in cells if (c["variant"], c["size"]) == (r["variant"], r["size"])]
        for r in pooled
    }
    lines += [
        "Per size, over its environments (every block of that size):",
        "",
        table(
            [
                "size",
                "variant",
                f"x {REFERENCE}'s time [95% CI]",
                "blocks",
                "verdict",
                "environments",
                "lowest cell",
                "highest cell",
            ],
            [
                [
                    r["size"],
                    r["variant"],
                    with_interval(r["ratio"], r["ci_low"], r["ci_high"]),
                    r["n_blocks"],
                    r["verdict"],
                    len(spread[r["variant"], r["size"]]),
                    fmt(min(spread[r["variant"], r["size"]])),
                    fmt(max(spread[r["variant"], r["size"]])),
                ]
                for r in pooled
            ],
        ),
        "",
        f"Per environment and size (x {REFERENCE}'s time [95% CI]; environments by cost):",
        "",
        table(
            ["env", "size", *variants],
            [
                [
                    env,
                    size,
                    *[
                        next(
                            (
                                with_interval(r["ratio"], r["ci_low"], r["ci_high"])
                                for r in cells
                                if (r["variant"], r["env"], r["size"]) == (v, env, size)
                            ),
                            "",
                        )
                        for v in variants
                    ],
                ]
                for size in sizes
                for env in sorted(envs, key=x.get)
                if any((r["env"], r["size"]) == (env, size) for r in cells)
            ],
        ),
    ]
    return lines


# ---------------------------------------------------------------- figures
def plot_durations(runs, directory, out):
    totals = median_by(runs, lambda r: (r.variant, r.env, r.size), lambda r: r.total)
    envs = sorted({r.env for r in runs})
    x, xlabel, log = env_axis(directory, envs)
    variants = ordered([k[0] for k in totals], VARIANTS)
    fig, ax = plt.subplots(figsize=(8, 5))
    for variant, size in itertools.product(variants, sizes_of(runs)):
        points = sorted((x[e], t) for (v, e, z), t in totals.items() if (v, z) == (variant, size))
        if points:
            ax.plot(*zip(*points), color=COLORS.get(variant), marker=MARKERS.get(size, "x"), lw=0.6, alpha=0.8)
    for variant in variants:
        ax.scatter([], [], color=COLORS.get(variant), label=variant)
    for size in sizes_of(runs):
        ax.scatter([], [], color="gray", marker=MARKERS.get(size, "x"), label=f"size {size}")
    ax.set(
        xlabel=xlabel,
        ylabel="total duration (s), median over seeds",
        title="Total duration per run (setup, compilation and all iterations)",
    )
    ax.set_yscale("log")
    if log:
        ax.set_xscale("log")
    else:
        ax.set_xlim(-0.5, len(envs) - 0.5)
    name_envs(ax, x)
    ax.legend(fontsize=7, ncol=2)
    rows = [
        [env, size, *[fmt(totals.get((v, env, size))) for v in variants]]
        for size in sizes_of(runs)
        for env in sorted(envs, key=x.get)
    ]
    return [
        save(fig, out, "duration.png"),
        "Total duration (s), median over seeds:",
        "",
        table(["env", "size", *variants], rows),
    ]


def plot_speedups(runs, out, stats):
    """Pairwise ratios of every two variants, per size and metric, with their intervals."""
    sizes = sizes_of(runs)
    variants = ordered([r.variant for r in runs if r.variant in SPEEDUP_VARIANTS], SPEEDUP_VARIANTS)
    pairs = list(itertools.combinations(variants, 2))
    rows = {m: [compare(runs, a, b, m, size) for size in sizes for a, b in pairs] for m in SPEEDUP_METRICS}
    rows = {m: [r for r in rs if r] for m, rs in rows.items()}
    if not any(rows.values()):
        return []
    stats.extend(r for rs in rows.values() for r in rs)
    fig, axes = plt.subplots(len(SPEEDUP_METRICS), len(sizes), figsize=(4 + 3 * len(sizes), 11), squeeze=False)
    for row, metric in zip(axes, SPEEDUP_METRICS):
        for ax, size in zip(row, sizes):
            draw_ratios(ax, [r for r in rows[metric] if r["size"] == size])
            ax.set(title=f"{metric}, size {size}", ylabel="time(B) / time(A)")
            ax.title.set_fontsize(8)
    lines = [
        save(fig, out, "speedup.png"),
        f"Speedup of A over B = time(B) / time(A) (> 1: A is faster), {RATIO_TEXT} Dots: the blocks; "
        "bars: the geometric mean and its interval.",
        "",
    ]
    for metric in SPEEDUP_METRICS:
        lines += [f"### Speedup, {metric}", "", ratio_table(rows[metric]), ""]
    return lines


def median_with_interval(values) -> tuple[float, float, float]:
    """The median and its bootstrap interval ((nan, nan) under MIN_BLOCKS values)."""
    if len(values) < MIN_BLOCKS:
        return float(np.median(values)), np.nan, np.nan
    return float(np.median(values)), *interval(np.array(values, float), np.median)


def plot_overhead(runs, out):
    """Setup and iteration 0 (compilation) in seconds, and the later windows' seconds per iteration."""
    sizes, variants = sizes_of(runs), ordered([r.variant for r in runs], VARIANTS)
    windows = {"setup": None, **WINDOWS}
    values = defaultdict(list)  # (variant, size, window): one value per run
    for r in runs:
        values[r.variant, r.size, "setup"].append(r.record["setup_duration"])
        for window, cut in WINDOWS.items():
            if r.record["iteration_durations"][cut]:
                values[r.variant, r.size, window].append(float(np.mean(r.record["iteration_durations"][cut])))
    medians = {key: median_with_interval(v) for key, v in values.items()}
    fig, axes = size_axes(sizes)
    width = 0.8 / len(windows)
    for ax, size in zip(axes[0], sizes):
        for j, window in enumerate(windows):
            cells = [medians.get((v, size, window), (np.nan,) * 3) for v in variants]
            heights = np.array([c[0] for c in cells])
            bars = np.nan_to_num(np.array([[c[0] - c[1], c[2] - c[0]] for c in cells]).T.reshape(2, -1)).clip(0)
            shade = str(0.15 + 0.65 * j / max(len(windows) - 1, 1))  # grays: the colours name variants
            ax.bar(np.arange(len(variants)) + j * width, heights, width, yerr=bars, capsize=2, color=shade, label=window)
        ax.set_xticks(np.arange(len(variants)) + 1.5 * width, variants, rotation=30, fontsize=7)
        ax.set(
            ylabel="seconds (setup) or seconds per iteration", title=f"Setup, compilation and later iterations, size {size}"
        )
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    rows = [
        [size, v, *[fmt(medians.get((v, size, w), (np.nan,))[0]) for w in windows]]
        for size in sizes
        for v in variants
        if (v, size, "setup") in medians
    ]
    return [
        save(fig, out, "overhead.png"),
        "Seconds before iteration 0 (setup: env, model and optimizer built), and mean seconds per iteration in each "
        "window of iterations (0-based: iteration 0 is the first and includes compilation), median over "
        f"environments and seeds; in the figure with the median's {CONFIDENCE:.0%} bootstrap interval:",
        "",
        table(["size", "variant", *windows], rows),
    ]


def plot_rollout_update(runs, out, stats):
    sizes, variants = sizes_of(runs), ordered([r.variant for r in runs], VARIANTS)
    parts = {}
    for key, group in group_by(runs, lambda r: (r.variant, r.size)).items():
        # iteration 0 is left out: it holds the compilation of both parts
        parts[key] = tuple(
            float(np.median([np.median(r.record[f][1:] or r.record[f]) for r in group]))
            for f in ("rollout_durations", "update_durations")
        )
    # Shares, not seconds: the variants differ by orders of magnitude; the seconds are on the bars.
    # Below them, each part's time over jax_linen's, block by block.
    ratios = {
        metric: [
            against_reference(r)
            for v in variants
            for size in sizes
            if v != REFERENCE
            for r in [compare(runs, REFERENCE, v, metric, size)]
            if r
        ]
        for metric in ("rollout", "update")
    }
    panels = 2 if any(ratios.values()) else 1  # no second row without jax_linen to divide by
    fig, axes = plt.subplots(panels, len(sizes), figsize=(5 * len(sizes), 4.5 * panels), squeeze=False)
    for ax, size in zip(axes[1] if panels == 2 else [], sizes):
        for j, metric in enumerate(ratios):
            cell = [r for r in ratios[metric] if r["size"] == size]
            xs = np.array([variants.index(r["variant"]) for r in cell]) + 0.4 * j
            ax.bar(
                xs,
                [r["ratio"] for r in cell],
                0.4,
                yerr=interval_bars(cell),
                capsize=3,
                color=[COLORS.get(r["variant"]) for r in cell],
                alpha=1 if j == 0 else 0.5,
            )
        ax.axhline(1, color=COLORS[REFERENCE], lw=1, ls="--")
        ax.set_xticks(np.arange(len(variants)) + 0.2, variants, rotation=30, fontsize=7)
        ax.set(ylabel=f"x {REFERENCE}'s time", title=f"Each part over {REFERENCE}'s, size {size}")
        ax.set_yscale("log")
        keys = [Patch(color="0.3", label="rollout + GAE (solid)"), Patch(color="0.3", alpha=0.5, label="update (light)")]
        ax.legend(handles=keys, fontsize=7)
    for ax, size in zip(axes[0], sizes):
        rollout, update = np.array([parts.get((v, size), (np.nan, np.nan)) for v in variants]).T.reshape(2, -1)
        total = rollout + update
        ax.bar(variants, rollout / total, color="0.35", label="rollout + GAE")  # grays: the colours name variants
        bars = ax.bar(variants, update / total, bottom=rollout / total, color="0.75", label="update")
        ax.bar_label(bars, [f"{t:.3g} s" for t in total], fontsize=7)
        ax.set(
            ylabel="share of the iteration (median, iterations 1-end)",
            ylim=(0, 1.1),
            title=f"Rollout vs update (--sync-timing), size {size}",
        )
        ax.tick_params(axis="x", rotation=30, labelsize=7)
        ax.legend(fontsize=7, loc="lower right")
    rows = [
        [size, v, fmt(r), fmt(u), fmt(r / (r + u), 2)]
        for size in sizes
        for v in variants
        for r, u in [parts.get((v, size), (np.nan, np.nan))]
    ]
    lines = [
        save(fig, out, "rollout_update.png"),
        "Seconds per iteration with --sync-timing (median over iterations 1-end, then over environments and seeds):",
        "",
        table(["size", "variant", "rollout + GAE", "update", "rollout share"], rows),
    ]
    for metric in ("rollout", "update"):
        rows = [
            r for v in variants if v != REFERENCE for size in sizes for r in [compare(runs, REFERENCE, v, metric, size)] if r
        ]
        stats.extend(rows)
        lines += [
            "",
            f"### Speedup, {metric} (--sync-timing)",
            "",
            f"time(B) / time(A) of the {'rollout + GAE' if metric == 'rollout' else 'update'}, A = {REFERENCE}: "
            f"B's time as a multiple of {REFERENCE}'s, {RATIO_TEXT}",
            "",
            ratio_table(rows),
        ]
    return lines


def plot_compilation(runs, out, stats):
    """Compiled vs not compiled: speedup = time(not compiled) / time(compiled), block by block."""
    sizes = sizes_of(runs)
    rows = [compare(runs, on, off, metric, size) for size in sizes for on, off in COMPILE_PAIRS for metric in SPEEDUP_METRICS]
    rows = [r for r in rows if r]
    if not rows:
        return []
    stats.extend(rows)
    fig, axes = size_axes(sizes)
    for ax, size in zip(axes[0], sizes):
        for j, metric in enumerate(SPEEDUP_METRICS):
            cell = [r for r in rows if (r["size"], r["metric"]) == (size, metric)]
            x = np.array([COMPILE_PAIRS.index((r["a"], r["b"])) for r in cell]) + 0.27 * j
            bars = ax.bar(x, [r["ratio"] for r in cell], 0.27, color=str(0.25 + 0.25 * j), label=metric)  # grays
            ax.errorbar(x, [r["ratio"] for r in cell], yerr=interval_bars(cell), fmt="none", color="k", capsize=3)
            ax.bar_label(bars, fmt="%.3g", fontsize=6)
        ax.set_xticks(np.arange(len(COMPILE_PAIRS)) + 0.27, [f"{on}\nvs {off}" for on, off in COMPILE_PAIRS], fontsize=7)
        ax.axhline(1, color="gray", lw=0.8, ls="--")
        ax.set(ylabel="time(not compiled) / time(compiled)", title=f"Compilation on/off, size {size}")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    return [
        save(fig, out, "compilation.png"),
        f"Speedup from compilation = time(not compiled) / time(compiled), {RATIO_TEXT} "
        "(jax_nnx+nocache: NNX without cached_partial, run beside jax_nnx in the compile experiment.)",
        "",
        *[
            line
            for metric in SPEEDUP_METRICS
            for line in (f"**{metric}**", "", ratio_table([r for r in rows if r["metric"] == metric]), "")
        ],
    ]


def plot_memory(runs, memory):
    """Peak memory per variant and size, from the records that hold it (schema 2): the host's resident set,
    and on a GPU the peak of each framework's allocator, summed."""
    rows, groups = [], group_by(runs, lambda r: (r.size, r.variant))
    for size in sizes_of(runs):
        for variant in ordered([v for s, v in groups if s == size], VARIANTS):
            group = groups[size, variant]
            host = [r.record["peak_host_memory_mb"] for r in group if r.record.get("peak_host_memory_mb") is not None]
            gpu = [
                sum(x or 0 for x in r.record["gpu"]["peak_memory_mb"].values())
                for r in group
                if (r.record.get("gpu") or {}).get("peak_memory_mb")
            ]
            if host:
                rows.append(
                    {
                        "variant": variant,
                        "size": size,
                        "runs": len(host),
                        "host_mb_median": float(np.median(host)),
                        "host_mb_max": float(np.max(host)),
                        "gpu_mb_median": float(np.median(gpu)) if gpu else None,
                    }
                )
    if not rows:
        return []
    memory.extend(rows)
    gpu = any(r["gpu_mb_median"] is not None for r in rows)
    return [
        "Peak resident memory of the whole process (MiB: the framework, its compiled programs, the environments and "
        "the rollout), median and highest over the runs" + (", and the GPU allocators' peak" if gpu else "") + ":",
        "",
        table(
            ["size", "variant", "runs", "host MiB, median", "host MiB, highest", *(["GPU MiB, median"] if gpu else [])],
            [
                [
                    r["size"],
                    r["variant"],
                    r["runs"],
                    f"{r['host_mb_median']:.0f}",
                    f"{r['host_mb_max']:.0f}",
                    *([fmt(r["gpu_mb_median"])] if gpu else []),
                ]
                for r in rows
            ],
        ),
    ]


def steps_per_second(run) -> float:
    return run.record["env_steps"] / len(run.record["iteration_durations"]) / run.steady


def plot_scaling(runs, out):
    sps = median_by(runs, lambda r: (r.variant, r.num_envs), steps_per_second)
    variants = ordered([k[0] for k in sps], VARIANTS)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for v in variants:
        points = sorted((n, s) for (var, n), s in sps.items() if var == v)
        ax.plot(*zip(*points), marker="o", color=COLORS.get(v), label=v)
    ax.set(
        xlabel="--num-envs",
        ylabel="env steps per second (steady state)",
        title="Scaling with the amount of work (CartPole-v1, size s)",
    )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    num_envs = sorted({k[1] for k in sps})
    rows = [[v, *[f"{sps[(v, n)]:.0f}" if (v, n) in sps else "n/a" for n in num_envs]] for v in variants]
    return [
        save(fig, out, "scaling.png"),
        "Env steps per second (batch / median iteration time, iterations 1-end), median over seeds:",
        "",
        table(["variant", *[f"{n} envs" for n in num_envs]], rows),
    ]


def iqm_over_runs(scores):
    """rliable's IQM (metrics.aggregate_iqm: scipy's trim_mean cutting 25% each side), per column at
    once, in NumPy: a curve's bootstrap calls it thousands of times."""
    cut = int(0.25 * len(scores))
    return np.sort(scores, axis=0)[cut : len(scores) - cut].mean(0)


def interval_estimates(scores: dict, func, reps: int = RLIABLE_REPS):
    """rliable's point estimates and stratified-bootstrap intervals, the same for the same scores."""
    # rliable's bootstraps draw their resamples from NumPy's global generator (np.random.choice in their
    # update_indices) and ignore their random_state: seed the global one for the call, and give its state back.
    state = np.random.get_state()
    np.random.seed(SEED)
    try:
        return rly.get_interval_estimates(scores, func, reps=reps)
    finally:
        np.random.set_state(state)


def iqm_band(returns):
    """(IQM over the runs, interval low, interval high) of a (runs, points) array, point by point; the interval is
    rliable's stratified bootstrap."""
    if returns.shape[1] == 0:  # no point where every run has a value
        return np.array([]), np.array([]), np.array([])
    iqm, ci = interval_estimates({"runs": returns[:, None, :]}, lambda s: iqm_over_runs(s[:, 0, :]), reps=CURVE_REPS)
    return iqm["runs"], *ci["runs"]


def curve(group):
    """(env steps, IQM over the runs, interval low, interval high) of episodic_return per iteration, over
    the iterations where every run finished an episode."""
    length = min(len(r.record["episodic_return"]) for r in group)
    returns = np.array([[np.nan if x is None else x for x in r.record["episodic_return"][:length]] for r in group])
    steps = np.arange(1, length + 1) * group[0].record["env_steps"] / len(group[0].record["episodic_return"])
    keep = np.isfinite(returns).all(0)
    return steps[keep], *iqm_band(returns[:, keep])


def clock_curve(group, points=80):
    """(seconds since train() started, IQM, interval low, interval high) of the return against wall-clock time:
    at each time, each run's return is that of the last iteration it had ended by then. Over the times where
    every run has one: from the slowest run's first iteration to the fastest run's end."""
    ends = [r.record["setup_duration"] + np.cumsum(r.record["iteration_durations"]) for r in group]
    start, stop = max(e[0] for e in ends), min(e[-1] for e in ends)
    seconds = np.geomspace(start, stop, points) if stop > start else np.array([start])
    returns = np.array(
        [
            [
                np.nan if (x := r.record["episodic_return"][np.searchsorted(e, s, side="right") - 1]) is None else x
                for s in seconds
            ]
            for r, e in zip(group, ends)
        ]
    )
    keep = np.isfinite(returns).all(0)
    return seconds[keep], *iqm_band(returns[:, keep])


def draw_curves(ax, groups, label=lambda variant: variant, against=curve):
    for variant in ordered(groups, VARIANTS):
        x, iqm, low, high = against(groups[variant])
        ax.plot(x, iqm, color=COLORS.get(variant), label=label(variant))
        ax.fill_between(x, low, high, color=COLORS.get(variant), alpha=0.2)


def plot_learning_curves(runs, out):
    """One panel per (environment, size) that ran: no empty panels."""
    cells = sorted({(r.env, r.size) for r in runs}, key=lambda c: (c[0], list(MARKERS).index(c[1]) if c[1] in MARKERS else 9))
    columns = min(4, len(cells))
    rows = -(-len(cells) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 2.6 * rows), squeeze=False)
    for ax, (env, size) in zip(axes.flat, cells):
        draw_curves(ax, group_by([r for r in runs if (r.env, r.size) == (env, size)], lambda r: r.variant))
        ax.set(title=f"{env}, size {size}", xlabel="env steps", ylabel="episodic return")
        ax.title.set_fontsize(9)
    for ax in axes.flat[len(cells) :]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=7)
    return [
        save(fig, out, "learning_curves.png", legend_inches=0.3),
        f"Episodic return per iteration: IQM over seeds, shaded its {CONFIDENCE:.0%} stratified-bootstrap interval "
        "(rliable); runs of the overall experiment.",
    ]


def probability_of_improvement(finals, pairs) -> dict:
    """{(x, y): (P(a run of x ends higher than a run of y), interval low, high)}: rliable's, with its
    stratified bootstrap."""
    scores = {f"{x} vs {y}": (np.array(finals[x], float)[:, None], np.array(finals[y], float)[:, None]) for x, y in pairs}
    point, ci = interval_estimates(scores, rly_metrics.probability_of_improvement)
    return {(x, y): (float(point[f"{x} vs {y}"]), *map(float, np.ravel(ci[f"{x} vs {y}"]))) for x, y in pairs}


def collapse_difference(a, b, below=COLLAPSED) -> tuple[float, float, float]:
    """The share of runs of a that end below `below` minus b's, with Newcombe's hybrid score interval
    (Statistics in Medicine 17:873, 1998, method 10) built from scipy's Wilson intervals of each share.
    Unlike a bootstrap, it stays honest when a share is 0 of n: resampling no collapses gives none."""
    (ka, na), (kb, nb) = ((int(np.sum(np.array(x) < below)), len(x)) for x in (a, b))
    (pa, la, ua), (pb, lb, ub) = (
        (k / n, *stats.binomtest(k, n).proportion_ci(CONFIDENCE, method="wilson")) for k, n in ((ka, na), (kb, nb))
    )
    difference = pa - pb
    return float(difference), float(difference - np.hypot(pa - la, ub - pb)), float(difference + np.hypot(ua - pa, pb - lb))


def learning_statistics(finals, reference=REFERENCE, collapse=COLLAPSED):
    """Per variant, rliable's IQM and mean of final_return with stratified-bootstrap intervals, the
    share of runs that end below `collapse` (if the environment has such a line), and the probability of
    improvement over the reference with its interval, as summary.json rows."""
    scores = {v: np.array(f, dtype=float)[:, None] for v, f in finals.items()}  # (runs, 1 task)
    aggregate = lambda s: np.array([rly_metrics.aggregate_iqm(s), rly_metrics.aggregate_mean(s)])
    point, ci = interval_estimates(scores, aggregate)
    improvement = probability_of_improvement(
        finals, [(v, reference) for v in finals if v != reference and reference in finals]
    )
    rows = []
    for v in ordered(scores, VARIANTS):
        n = len(finals[v])
        pi, pi_low, pi_high = improvement.get((v, reference), (np.nan,) * 3)
        if v == reference:
            verdict = "the reference"
        elif (v, reference) not in improvement or n < MIN_BLOCKS or len(finals[reference]) < MIN_BLOCKS:
            verdict = "too few runs"
        else:
            verdict = (
                "learns like the reference"
                if pi_low <= 0.5 <= pi_high
                else "learns better than the reference"
                if pi_low > 0.5
                else "learns worse than the reference"
            )
        rows.append(
            {
                "variant": v,
                "n_seeds": n,
                "iqm": float(point[v][0]),
                "iqm_ci_low": float(ci[v][0][0]),
                "iqm_ci_high": float(ci[v][1][0]),
                "mean": float(point[v][1]),
                "mean_ci_low": float(ci[v][0][1]),
                "mean_ci_high": float(ci[v][1][1]),
                f"prob_improvement_vs_{reference}": none_if_nan(pi),
                f"prob_improvement_vs_{reference}_ci_low": none_if_nan(pi_low),
                f"prob_improvement_vs_{reference}_ci_high": none_if_nan(pi_high),
                "min": float(np.min(finals[v])),
                **({f"share_below_{collapse}": float(np.mean(np.array(finals[v]) < collapse))} if collapse else {}),
                "verdict": verdict,
            }
        )
    return rows


def time_to_threshold(record, threshold):
    """(seconds from the start of train() until an iteration's mean return first reaches `threshold`, setup and
    compilation included; the same without setup and iteration 0), or (None, None) if no iteration does."""
    durations = record["iteration_durations"]
    for i, value in enumerate(record["episodic_return"]):
        if value is not None and value >= threshold:
            return record["setup_duration"] + sum(durations[: i + 1]), sum(durations[1 : i + 1])
    return None, None


def threshold_statistics(groups, threshold):
    """Per variant: the share of runs that reach `threshold` (Wilson interval), and over the runs that reach it the
    IQM of the seconds it took, with and without setup and iteration 0 (rliable's stratified bootstrap)."""
    rows = []
    for v in ordered(groups, VARIANTS):
        times = [time_to_threshold(r.record, threshold) for r in groups[v]]
        reached = np.array([t for t in times if t[0] is not None], float).reshape(-1, 2)
        low, high = stats.binomtest(len(reached), len(times)).proportion_ci(CONFIDENCE, method="wilson")
        row = {
            "variant": v,
            "threshold": threshold,
            "runs": len(times),
            "reached": len(reached),
            "share_reached": len(reached) / len(times),
            "share_reached_ci": [float(low), float(high)],
        }
        for key in ("seconds", "seconds_after_iteration_0"):
            row.update({key: None, f"{key}_ci": None})
        if len(reached) >= MIN_BLOCKS:
            point, ci = interval_estimates(
                {"seconds": reached[:, :1], "seconds_after_iteration_0": reached[:, 1:]}, rly_metrics.aggregate_iqm
            )
            for key in point:
                row.update({key: float(np.ravel(point[key])[0]), f"{key}_ci": [float(x) for x in np.ravel(ci[key])]})
        rows.append(row)
    return rows


# Each environment's bar for learning: CartPole-v1's 475 (of 500) and Acrobot-v1's -100 (gymnasium's
# reward_threshold for both); and, on CartPole-v1, the line below which a run that reached 500 "collapsed".
THRESHOLDS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0}
COLLAPSE_BELOW = {"CartPole-v1": COLLAPSED}


def plot_learn(runs, out, stats, learning, learning_pairs, thresholds):
    lines = []
    for env in sorted({r.env for r in runs}):
        lines += [f"### {env}", ""]
        lines += learn_env(env, [r for r in runs if r.env == env], out, stats, learning, learning_pairs, thresholds)
        lines.append("")
    return lines


def learn_env(env, runs, out, stats, learning, learning_pairs, thresholds):
    """One environment's learn runs: the return against steps and against seconds, the final returns with
    rliable's statistics, the time to the threshold, and the seconds per iteration."""
    groups = group_by(runs, lambda r: r.variant)
    finals = {
        v: [r.record["final_return"] for r in sorted(g, key=lambda r: r.seed) if r.record["final_return"] is not None]
        for v, g in groups.items()
    }
    finals = {v: f for v, f in finals.items() if len(f) >= MIN_BLOCKS}
    collapse, threshold = COLLAPSE_BELOW.get(env), THRESHOLDS.get(env)
    rows = learning_statistics(finals, collapse=collapse) if finals else []
    learning.extend({"env": env, **r} for r in rows)
    pairs = probability_of_improvement(finals, [(a, b) for a, b in LEARN_PAIRS if a in finals and b in finals])
    collapses = {(a, b): collapse_difference(finals[a], finals[b], collapse) for a, b in pairs} if collapse else {}
    learning_pairs.extend(
        {
            "env": env,
            "a": a,
            "b": b,
            "prob_improvement": pi,
            "ci_low": low,
            "ci_high": high,
            **(
                {
                    f"share_below_{collapse}_difference": collapses[a, b][0],
                    f"share_below_{collapse}_difference_ci": collapses[a, b][1:],
                }
                if collapse
                else {}
            ),
        }
        for (a, b), (pi, low, high) in pairs.items()
    )
    reach = threshold_statistics(groups, threshold) if threshold is not None else []
    thresholds.extend({"env": env, **r} for r in reach)
    name = f"learn_{re.sub(r'[^A-Za-z0-9.-]+', '-', env)}.png"
    fig, (curves, clock, bars) = plt.subplots(1, 3, figsize=(18, 5), gridspec_kw={"width_ratios": [3, 3, 2]})
    draw_curves(curves, groups, lambda v: f"{v} ({len(groups[v])} seeds)")
    curves.set(xlabel="env steps", ylabel="episodic return (IQM over seeds)", title=f"{env}, each script's default config")
    curves.legend(fontsize=8)
    draw_curves(clock, groups, against=clock_curve)
    clock.set(
        xlabel="seconds since train() started (setup and compilation included)",
        ylabel="episodic return (IQM over seeds)",
        title="The same runs against the wall clock",
    )
    clock.set_xscale("log")
    if threshold is not None:
        for ax in (curves, clock):
            ax.axhline(threshold, color="gray", lw=0.8, ls=":")
    for i, r in enumerate(rows):
        color = COLORS.get(r["variant"])
        for key, y in (("iqm", i + 0.2), ("mean", i - 0.2)):
            bars.errorbar(
                r[key],
                y,
                xerr=[[r[key] - r[f"{key}_ci_low"]], [r[f"{key}_ci_high"] - r[key]]],
                fmt="o" if key == "iqm" else "s",
                color=color,
                capsize=3,
                alpha=1 if key == "iqm" else 0.6,
                label={"iqm": "IQM", "mean": "mean"}[key] if i == 0 else None,
            )
        seeds = finals[r["variant"]]
        bars.scatter(seeds, np.full(len(seeds), i), s=8, color="gray", alpha=0.5, label="runs" if i == 0 else None)
    bars.set_yticks(range(len(rows)), [r["variant"] for r in rows], fontsize=8)
    bars.set_ylim(-0.6, len(rows) - 0.4)
    bars.set(xlabel="final_return (last 10 iterations)", title=f"IQM and mean with {CONFIDENCE:.0%} intervals")
    if rows:
        bars.legend(fontsize=7)
    else:
        bars.set_visible(False)
    key = f"prob_improvement_vs_{REFERENCE}"
    lines = [
        save(fig, out, name),
        f"final_return (mean return of the episodes that ended in the last 10 iterations) over seeds: IQM and "
        f"mean with {CONFIDENCE:.0%} stratified-bootstrap intervals, the lowest run, and the probability that a "
        f"run of the variant ends higher than a run of {REFERENCE} (rliable). A variant learns like the reference "
        "when that probability's interval contains 0.5."
        + (f" The dotted line: the threshold, {threshold:g}." if threshold is not None else ""),
        "",
        table(
            [
                "variant",
                "seeds",
                "IQM [95% CI]",
                "mean [95% CI]",
                "lowest",
                *([f"below {collapse}"] if collapse else []),
                f"P(improvement over {REFERENCE})",
                "verdict",
            ],
            [
                [
                    r["variant"],
                    r["n_seeds"],
                    with_interval(r["iqm"], r["iqm_ci_low"], r["iqm_ci_high"], 4),
                    with_interval(r["mean"], r["mean_ci_low"], r["mean_ci_high"], 4),
                    fmt(r["min"], 4),
                    *([f"{r[f'share_below_{collapse}']:.0%}"] if collapse else []),
                    with_interval(r.get(key), r.get(f"{key}_ci_low"), r.get(f"{key}_ci_high"), 2)
                    if r.get(key) is not None
                    else "n/a",
                    r["verdict"],
                ]
                for r in rows
            ],
        ),
        "",
    ]
    if reach:
        interval_text = lambda r, k: (
            with_interval(r[k], *(r[f"{k}_ci"] or (None, None))) if r[k] is not None else "too few runs reach it"
        )
        lines += [
            f"Wall-clock to learn: seconds from the start of train() until an iteration's mean return first reaches "
            f"{threshold:g}, IQM over the runs that reach it with its {CONFIDENCE:.0%} stratified-bootstrap interval; "
            "the same without setup and iteration 0 (compilation); and the share of runs that reach it (Wilson interval). "
            "The interpreter's start and the imports come before train() and are not counted.",
            "",
            table(
                ["variant", "runs", "reach it [95% CI]", "seconds to it [95% CI]", "without setup and iteration 0 [95% CI]"],
                [
                    [
                        r["variant"],
                        r["runs"],
                        with_interval(r["share_reached"], *r["share_reached_ci"], 2),
                        interval_text(r, "seconds"),
                        interval_text(r, "seconds_after_iteration_0"),
                    ]
                    for r in reach
                ],
            ),
            "",
        ]
    if pairs:
        lines += [
            "The same probability between the variants that differ by one thing (the same runs)"
            + (
                f", and the difference in the share of runs that end below {collapse} with Newcombe's score interval:"
                if collapse
                else ":"
            ),
            "",
            table(
                [
                    "A",
                    "B",
                    "P(a run of A ends higher than one of B) [95% CI]",
                    "verdict",
                    *([f"share below {collapse}, A - B [95% CI]", "verdict"] if collapse else []),
                ],
                [
                    [
                        a,
                        b,
                        with_interval(pi, low, high, 2),
                        "no difference detected" if low <= 0.5 <= high else f"{a if low > 0.5 else b} learns better",
                        *(
                            [
                                with_interval(*collapses[a, b], 2),
                                "no difference detected"
                                if collapses[a, b][1] <= 0 <= collapses[a, b][2]
                                else f"{a if collapses[a, b][1] > 0 else b} collapses more often",
                            ]
                            if collapse
                            else []
                        ),
                    ]
                    for (a, b), (pi, low, high) in pairs.items()
                ],
            ),
            "",
        ]
    first = median_by(runs, lambda r: r.variant, lambda r: r.record["iteration_durations"][0])
    steady = median_by(runs, lambda r: r.variant, lambda r: r.steady)
    ratios = [
        compare(runs, a, b, metric, size)
        for a, b in LEARN_PAIRS
        for metric in ("steady", "iteration 0")
        for size in sizes_of(runs)
    ]
    ratios = [r for r in ratios if r]
    stats.extend(ratios)
    lines += [
        "Seconds per iteration in these runs (iteration 0 includes compilation; steady = median of iterations "
        "1-end), median over seeds:",
        "",
        table(["variant", "iteration 0", "steady"], [[v, fmt(first[v]), fmt(steady[v])] for v in ordered(groups, VARIANTS)]),
    ]
    if ratios:
        lines += [
            "",
            f"Ratios time(B) / time(A) seed by seed, {RATIO_TEXT}",
            "",
            table(
                ["metric", "A", "B", "ratio [95% CI]", "blocks", "verdict"],
                [
                    [
                        r["metric"],
                        r["a"],
                        r["b"],
                        with_interval(r["ratio"], r["ci_low"], r["ci_high"]),
                        r["n_blocks"],
                        r["verdict"],
                    ]
                    for r in ratios
                ],
            ),
        ]
    return lines


# ---------------------------------------------------------------- main
def header(runs, failures, directory):
    versions = {}
    for r in runs:
        versions.update(r.record["versions"])
    try:
        host = json.loads((directory / "env_cost.json").read_text())["host"]
        cores = f", {host['cpu_count']} CPU cores ({host['machine']})"
    except (OSError, ValueError, KeyError):
        cores = ""
    device = machine(runs[0].record)
    if device == "cpu, model not recorded":
        device = f"cpu{cores}"
    lines = [
        "# benchback results",
        "",
        f"Device: {device}. Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".",
        f"{len(runs)} runs from {directory}; {len(failures)} files skipped (failed runs, unreadable files).",
    ]
    lines += [f"- skipped: {f}" for f in failures]
    lines += [
        f"- compiled again after iteration 0 ({r.record['compiles_after_first_iteration']}x), its times include it: "
        f"{r.experiment}/{r.variant} {r.env} {r.size} seed {r.seed}"
        for r in runs
        if r.record["compiles_after_first_iteration"]
    ]
    return lines + [""]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", type=Path, help="a benchmark.sh output directory")
    parser.add_argument("--out", type=Path, help="where to write the PNGs and summary.md (default: DIR)")
    args = parser.parse_args(argv)
    if not args.dir.is_dir():
        print(f"error: {args.dir} is not a directory", file=sys.stderr)
        return 2
    runs, failures = load_runs(args.dir)
    if not runs:
        print(f"error: no run records (schema 1 or 2 JSON with status ok) under {args.dir}", file=sys.stderr)
        return 2
    out = args.out or args.dir
    by_machine = group_by(runs, lambda r: machine(r.record))
    if len(by_machine) == 1:
        report(runs, failures, args.dir, out)
        return 0
    # A time on one machine is never divided by a time on another: one report per machine.
    print(f"records from {len(by_machine)} machines: one report per machine, in {out}/machine-*", file=sys.stderr)
    for name, machine_runs in sorted(by_machine.items()):
        report(machine_runs, failures, args.dir, out / f"machine-{re.sub(r'[^A-Za-z0-9.]+', '-', name).strip('-')}")
    return 0


def machine(record) -> str:
    """What a run's times were measured on: its GPU, or its CPU model and the cores it could use (records
    before schema 2 do not name the CPU: they count as one machine of their own)."""
    if record["device"] != "cpu":
        return record["device"]
    cpu = record.get("cpu")
    return f"{cpu['model']}, {cpu['cores']} cores" if cpu else "cpu, model not recorded"


def report(runs, failures, directory: Path, out: Path) -> None:
    """The figures, summary.md and summary.json of runs (all from one device) into out."""
    out.mkdir(parents=True, exist_ok=True)
    for path in out.glob("*.png"):  # a figure left from an earlier plot of other data would mislead
        if path.name in FIGURES or path.name.startswith("learn_"):
            path.unlink()
    by_experiment = group_by(runs, lambda r: r.experiment)
    overall, sync = by_experiment["overall"], by_experiment["sync"]
    # summary.json's rows, filled by the sections
    ratios, answer, memory, learning, learning_pairs, thresholds = [], [], [], [], [], []
    sections = [  # (title, experiment's runs, how to draw them): a section without runs or results is left out
        (f"The answer: each variant's time over {REFERENCE}'s", overall, lambda rs: plot_answer(rs, directory, out, answer)),
        ("Overhead: iteration 0 vs 1-7 vs 8-end", overall, lambda rs: plot_overhead(rs, out)),
        ("Rollout vs update (--sync-timing)", sync, lambda rs: plot_rollout_update(rs, out, ratios)),
        ("Compilation on/off", overall + by_experiment["compile"], lambda rs: plot_compilation(rs, out, ratios)),
        ("Peak memory", runs, lambda rs: plot_memory(rs, memory)),
        ("Total duration by environment cost", overall, lambda rs: plot_durations(rs, directory, out)),
        ("Pairwise speedups", overall, lambda rs: plot_speedups(rs, out, ratios)),
        ("Scaling with --num-envs", by_experiment["scaling"], lambda rs: plot_scaling(rs, out)),
        ("Learning curves", overall, lambda rs: plot_learning_curves(rs, out)),
        (
            "Does every variant learn? (learn preset)",
            by_experiment["learn"],
            lambda rs: plot_learn(rs, out, ratios, learning, learning_pairs, thresholds),
        ),
    ]
    lines = header(runs, failures, directory)
    for title, section_runs, draw in sections:
        body = draw(section_runs) if section_runs else []
        if body:
            lines += [f"## {title}", "", *body, ""]
    write_atomic(out / "summary.md", "\n".join(lines))
    write_atomic(
        out / "summary.json",
        json.dumps(
            {
                "device": runs[0].record["device"],
                "machine": machine(runs[0].record),
                "confidence": CONFIDENCE,
                "min_blocks": MIN_BLOCKS,
                "ratios": [{k: v for k, v in r.items() if k != "blocks"} for r in ratios],
                "answer": [{k: v for k, v in r.items() if k != "blocks"} for r in answer],
                "memory": memory,
                "learning": learning,
                "learning_pairs": learning_pairs,
                "time_to_threshold": thresholds,
            },
            indent=1,
        ),
    )
    print(f"wrote {out / 'summary.md'}, summary.json and {len(list(out.glob('*.png')))} figures")


def write_atomic(path: Path, text: str) -> None:
    """Through a temporary file and a rename, as the scripts write their records: never half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


if __name__ == "__main__":
    sys.exit(main())
