"""Figures and tables from a benchmark.sh output directory.

    python plot.py benchmark_out/cpu                 # PNGs and summary.md into that directory
    python plot.py benchmark_out/cpu --out results   # ... or into another one

Reads every run JSON (schema 1) under DIR, skipping with a warning files that do not parse and
failure records, plus DIR/env_cost.json (the x-axis "environment cost") when it is there.
Which experiment a run belongs to is its `args.exp_name`, which benchmark.sh sets.
Speedups are ratios of times on the same (env, size), each time the median over seeds:
"A vs B = 2.0" means A took half as long as B.
"""

import argparse
import itertools
import json
import sys
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # headless: no display needed, nothing opens a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

VARIANTS = ["jax_linen", "jax_nnx", "jax_nnx+nocache", "linen_nojit", "torch", "torch_compile"]
SPEEDUP_VARIANTS = ["jax_linen", "jax_nnx", "linen_nojit", "torch", "torch_compile"]
SIZES = {(64, 64): "s", (256,) * 3: "m", (1024,) * 6: "l"}
EXPERIMENTS = ("overall", "sync", "compile", "scaling", "learn")
# (compiled, not compiled): the pairs of experiment (3)
COMPILE_PAIRS = [("jax_linen", "linen_nojit"), ("jax_nnx", "jax_nnx+nocache"), ("torch_compile", "torch")]
# Iteration 0 holds tracing and compilation; 1-7 may still warm up (caches, allocator); 8-end is steady.
WINDOWS = {"iteration 0": slice(0, 1), "iterations 1-7": slice(1, 8), "iterations 8-end": slice(8, None)}
LEARN_THRESHOLD = 475  # issue 6: every variant's final_return on CartPole-v1
# The learn preset runs each script's default config: the per-iteration goals of issues 3 and 4.
LEARN_PAIRS = [("jax_nnx", "jax_linen", "steady <= 1.05, iteration 0 <= 1.3"), ("torch_compile", "torch", "steady <= 0.8")]
COLORS = dict(zip(VARIANTS, plt.get_cmap("tab10").colors))
MARKERS = {"s": "o", "m": "s", "l": "^"}
FIGURES = ["duration.png", "speedup.png", "overhead.png", "rollout_update.png", "compilation.png", "scaling.png",
           "learning_curves.png", "learn.png"]


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
        if not isinstance(record, dict) or record.get("status") != "ok" or record.get("schema_version") != 1:
            reason = record.get("reason", "not a schema-1 run record") if isinstance(record, dict) else "not a record"
            warn(f"{path}: failure record or not a run ({reason}); skipped")
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


def plain_log_ticks(ax) -> None:
    """Plain tick labels (0.5, 2, 30) on log axes; minor ticks (2s and 5s) labelled only over a few decades."""
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() == "log":
            few_decades = high / low < 300
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if few_decades and f"{v:e}"[0] in "25" else ""))


# ---------------------------------------------------------------- environment cost
def env_axis(directory: Path, envs):
    """({env: x}, label, log scale?): the env-step cost in microseconds, or the env's rank by name."""
    try:
        costs = json.loads((directory / "env_cost.json").read_text())
        x = {env: costs["envs"][env]["median_s"] * 1e6 for env in envs}
        return x, f"env cost: one vmapped env.step of {costs['num_envs']} envs (us, median)", True
    except (OSError, ValueError, KeyError) as e:
        warn(f"no env cost for every environment ({e!r}); environments ordered by name instead")
        return {env: i for i, env in enumerate(sorted(envs))}, "environment (by name)", False


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
    ax.set(xlabel=xlabel, ylabel="total duration (s), median over seeds",
           title="Total duration per run (setup, compilation and all iterations)")
    ax.set_yscale("log")
    if log:
        ax.set_xscale("log")
    else:
        ax.set_xlim(-0.5, len(envs) - 0.5)
    for env in envs:  # name the environments along the x-axis
        ax.annotate(env, (x[env], 0), xycoords=("data", "axes fraction"), rotation=90, fontsize=6,
                    xytext=(2, 3), textcoords="offset points", alpha=0.6)
    ax.legend(fontsize=7, ncol=2)
    rows = [[env, size, *[fmt(totals.get((v, env, size))) for v in variants]]
            for size in sizes_of(runs) for env in sorted(envs, key=x.get)]
    return [save(fig, out, "duration.png"), "Total duration (s), median over seeds:", "",
            table(["env", "size", *variants], rows)]


def speedup_table(runs, metric):
    """{size: [(A, B, [time_B / time_A per env])]} for every variant pair on the same (env, size)."""
    times = median_by(runs, lambda r: (r.variant, r.env, r.size), metric)
    result = {}
    for size in sizes_of(runs):
        pairs = []
        for a, b in itertools.combinations(ordered([k[0] for k in times], SPEEDUP_VARIANTS), 2):
            if a in SPEEDUP_VARIANTS and b in SPEEDUP_VARIANTS:
                envs = sorted({k[1] for k in times if (a, k[1], size) in times and (b, k[1], size) in times})
                ratios = [times[(b, e, size)] / times[(a, e, size)] for e in envs]
                if ratios:
                    pairs.append((a, b, ratios))
        result[size] = pairs
    return result


def ratio_rows(pairs_by_size):
    return [[size, a, b, fmt(np.exp(np.mean(np.log(r))), 3), fmt(np.median(r), 3), fmt(min(r), 3),
             fmt(max(r), 3), len(r)] for size, pairs in pairs_by_size.items() for a, b, r in pairs]


def plot_speedups(runs, out):
    metrics = {"total duration": lambda r: r.total, "steady-state iteration (median of iterations 1-end)": lambda r: r.steady}
    tables = {name: speedup_table(runs, fn) for name, fn in metrics.items()}
    sizes = sizes_of(runs)
    if not any(pairs for by_size in tables.values() for pairs in by_size.values()):
        return ["No two variants ran on the same (env, size)."]
    fig, axes = plt.subplots(len(metrics), len(sizes), figsize=(4 + 3 * len(sizes), 8), squeeze=False)
    for row, (name, by_size) in zip(axes, tables.items()):
        for ax, size in zip(row, sizes):
            pairs = by_size[size]
            labels = [f"{a}\nvs {b}" for a, b, _ in pairs]
            for i, (_, _, ratios) in enumerate(pairs):
                ax.scatter(np.full(len(ratios), i), ratios, s=12, color="tab:blue", alpha=0.6)
                ax.hlines(np.exp(np.mean(np.log(ratios))), i - 0.3, i + 0.3, color="k")
            ax.axhline(1, color="gray", lw=0.8, ls="--")
            ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
            ax.set(xlim=(-0.5, len(labels) - 0.5), title=f"{name}, size {size}", ylabel="time(B) / time(A)")
            ax.set_yscale("log")
            ax.title.set_fontsize(8)
    header = ["size", "A", "B", "geomean", "median", "min", "max", "envs"]
    lines = [save(fig, out, "speedup.png"),
             "Speedup of A over B = time(B) / time(A) per environment (> 1: A is faster); bars: geometric mean.", ""]
    for name, by_size in tables.items():
        lines += [f"### Speedup, {name}", "", table(header, ratio_rows(by_size)), ""]
    return lines


def plot_overhead(runs, out):
    sizes, variants = sizes_of(runs), ordered([r.variant for r in runs], VARIANTS)
    means = {}
    for (variant, size), group in group_by(runs, lambda r: (r.variant, r.size)).items():
        for window, cut in WINDOWS.items():
            values = [np.mean(r.record["iteration_durations"][cut]) for r in group if r.record["iteration_durations"][cut]]
            means[(variant, size, window)] = float(np.median(values)) if values else np.nan
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.5), squeeze=False)
    width = 0.8 / len(WINDOWS)
    for ax, size in zip(axes[0], sizes):
        for j, window in enumerate(WINDOWS):
            ax.bar(np.arange(len(variants)) + j * width, [means.get((v, size, window), np.nan) for v in variants],
                   width, label=window)
        ax.set_xticks(np.arange(len(variants)) + width, variants, rotation=30, fontsize=7)
        ax.set(ylabel="seconds per iteration", title=f"Per-iteration time by window, size {size}")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    rows = [[size, v, *[fmt(means.get((v, size, w))) for w in WINDOWS]] for size in sizes for v in variants]
    return [save(fig, out, "overhead.png"),
            "Mean seconds per iteration in each window of iterations (0-based: iteration 0 is the first and "
            "includes compilation), median over environments and seeds:", "",
            table(["size", "variant", *WINDOWS], rows)]


def plot_rollout_update(runs, out):
    sizes, variants = sizes_of(runs), ordered([r.variant for r in runs], VARIANTS)
    parts = {}
    for key, group in group_by(runs, lambda r: (r.variant, r.size)).items():
        # iteration 0 is left out: it holds the compilation of both parts
        parts[key] = tuple(float(np.median([np.median(r.record[f][1:] or r.record[f]) for r in group]))
                           for f in ("rollout_durations", "update_durations"))
    # Shares, not seconds: the variants differ by orders of magnitude; the seconds are on the bars.
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.5), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        rollout, update = np.array([parts.get((v, size), (np.nan, np.nan)) for v in variants]).T.reshape(2, -1)
        total = rollout + update
        ax.bar(variants, rollout / total, label="rollout + GAE")
        bars = ax.bar(variants, update / total, bottom=rollout / total, label="update")
        ax.bar_label(bars, [f"{t:.3g} s" for t in total], fontsize=7)
        ax.set(ylabel="share of the iteration (median, iterations 1-end)", ylim=(0, 1.1),
               title=f"Rollout vs update (--sync-timing), size {size}")
        ax.tick_params(axis="x", rotation=30, labelsize=7)
        ax.legend(fontsize=7, loc="lower right")
    rows = [[size, v, fmt(r), fmt(u), fmt(r / (r + u), 2)] for size in sizes for v in variants
            for r, u in [parts.get((v, size), (np.nan, np.nan))]]
    return [save(fig, out, "rollout_update.png"),
            "Seconds per iteration with --sync-timing (median over iterations 1-end, then over environments and seeds):", "",
            table(["size", "variant", "rollout + GAE", "update", "rollout share"], rows)]


def plot_compilation(runs, out):
    """Compiled vs not compiled on the same (env, size): speedup = time(off) / time(on)."""
    sizes = sizes_of(runs)
    metrics = {"total": lambda r: r.total, "steady": lambda r: r.steady}
    results = {}  # (on, off, size, metric) -> ratios over envs
    for metric, fn in metrics.items():
        times = median_by(runs, lambda r: (r.variant, r.env, r.size), fn)
        for (on, off), size in itertools.product(COMPILE_PAIRS, sizes):
            envs = sorted({k[1] for k in times if (on, k[1], size) in times and (off, k[1], size) in times})
            if envs:
                results[(on, off, size, metric)] = [times[(off, e, size)] / times[(on, e, size)] for e in envs]
    if not results:
        return ["No compiled and not-compiled runs on the same (env, size)."]
    fig, axes = plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.5), squeeze=False)
    for ax, size in zip(axes[0], sizes):
        for j, metric in enumerate(metrics):
            pairs = [(on, off) for on, off in COMPILE_PAIRS if (on, off, size, metric) in results]
            geo = [np.exp(np.mean(np.log(results[(on, off, size, metric)]))) for on, off in pairs]
            bars = ax.bar(np.arange(len(pairs)) + 0.4 * j, geo, 0.4, label=f"{metric} (geomean over envs)")
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
            ax.set_xticks(np.arange(len(pairs)) + 0.2, [f"{on}\nvs {off}" for on, off in pairs], fontsize=7)
        ax.axhline(1, color="gray", lw=0.8, ls="--")
        ax.set(ylabel="time(not compiled) / time(compiled)", title=f"Compilation on/off, size {size}")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    rows = [[size, on, off, metric, fmt(np.exp(np.mean(np.log(r))), 3), fmt(np.median(r), 3), len(r)]
            for size, (on, off), metric in itertools.product(sizes, COMPILE_PAIRS, metrics)
            for r in [results.get((on, off, size, metric))] if r]
    return [save(fig, out, "compilation.png"),
            "Speedup from compilation = time(not compiled) / time(compiled) per environment; total = whole run, "
            "steady = median iteration 1-end:", "",
            table(["size", "compiled", "not compiled", "metric", "geomean", "median", "envs"], rows)]


def steps_per_second(run) -> float:
    return run.record["env_steps"] / len(run.record["iteration_durations"]) / run.steady


def plot_scaling(runs, out):
    sps = median_by(runs, lambda r: (r.variant, r.num_envs), steps_per_second)
    variants = ordered([k[0] for k in sps], VARIANTS)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for v in variants:
        points = sorted((n, s) for (var, n), s in sps.items() if var == v)
        ax.plot(*zip(*points), marker="o", color=COLORS.get(v), label=v)
    ax.set(xlabel="--num-envs", ylabel="env steps per second (steady state)",
           title="Scaling with the amount of work (CartPole-v1, size s)")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    num_envs = sorted({k[1] for k in sps})
    rows = [[v, *[f"{sps[(v, n)]:.0f}" if (v, n) in sps else "n/a" for n in num_envs]] for v in variants]
    return [save(fig, out, "scaling.png"),
            "Env steps per second (batch / median iteration time, iterations 1-end), median over seeds:", "",
            table(["variant", *[f"{n} envs" for n in num_envs]], rows)]


def curve(group):
    """(env steps, mean, min, max) of episodic_return over the runs of a group (nan: no episode ended)."""
    length = min(len(r.record["episodic_return"]) for r in group)
    returns = np.array([[np.nan if x is None else x for x in r.record["episodic_return"][:length]] for r in group])
    steps = np.arange(1, length + 1) * group[0].record["env_steps"] / len(group[0].record["episodic_return"])
    with warnings.catch_warnings():  # an iteration where no seed finished an episode is nan, as it should be
        warnings.simplefilter("ignore", RuntimeWarning)
        return steps, np.nanmean(returns, 0), np.nanmin(returns, 0), np.nanmax(returns, 0)


def draw_curves(ax, groups, label=lambda variant: variant):
    for variant in ordered(groups, VARIANTS):
        steps, mean, low, high = curve(groups[variant])
        ax.plot(steps, mean, color=COLORS.get(variant), label=label(variant))
        ax.fill_between(steps, low, high, color=COLORS.get(variant), alpha=0.2)


def plot_learning_curves(runs, out):
    envs, sizes = sorted({r.env for r in runs}), sizes_of(runs)
    fig, axes = plt.subplots(len(envs), len(sizes), figsize=(4 * len(sizes), 2.6 * len(envs)), squeeze=False)
    for (i, env), (j, size) in itertools.product(enumerate(envs), enumerate(sizes)):
        cell = [r for r in runs if (r.env, r.size) == (env, size)]
        draw_curves(axes[i, j], group_by(cell, lambda r: r.variant))
        axes[i, j].set(title=f"{env}, size {size}", xlabel="env steps", ylabel="episodic return")
        axes[i, j].title.set_fontsize(9)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=7)
    return [save(fig, out, "learning_curves.png", legend_inches=0.3),
            "Episodic return per iteration (mean over seeds; shaded: min to max), runs of the overall experiment."]


def plot_learn(runs, out):
    groups = group_by(runs, lambda r: r.variant)
    finals = {v: {r.seed: r.record["final_return"] for r in group} for v, group in groups.items()}
    fig, ax = plt.subplots(figsize=(8, 5))
    draw_curves(ax, groups, lambda v: f"{v}: final " + ", ".join(fmt(finals[v][s], 4) for s in sorted(finals[v])))
    ax.axhline(LEARN_THRESHOLD, color="gray", ls="--", lw=0.8)
    ax.set(xlabel="env steps", ylabel="episodic return", title="CartPole-v1, default config: every variant")
    ax.legend(fontsize=8)
    seeds = sorted({r.seed for r in runs})
    rows = []
    for variant in ordered(groups, VARIANTS):
        values = [f for f in finals[variant].values() if f is not None]
        passed = len(values) == len(finals[variant]) and min(values) >= LEARN_THRESHOLD
        rows.append([variant, *[fmt(finals[variant].get(s), 4) for s in seeds], "yes" if passed else "no"])
    first = median_by(runs, lambda r: r.variant, lambda r: r.record["iteration_durations"][0])
    steady = median_by(runs, lambda r: r.variant, lambda r: r.steady)
    times = [[v, fmt(first[v]), fmt(steady[v])] for v in ordered(groups, VARIANTS)]
    # benchmark.sh runs a seed's variants one after the other, so a per-seed ratio compares runs
    # that shared the machine's state at the time.
    by_seed = {(r.variant, r.seed): r.steady for r in runs}

    def per_seed(a, b):
        return ", ".join(fmt(by_seed[a, s] / by_seed[b, s]) for s in seeds if (a, s) in by_seed and (b, s) in by_seed)

    pairs = [[a, b, fmt(steady[a] / steady[b]), per_seed(a, b), fmt(first[a] / first[b]), goal]
             for a, b, goal in LEARN_PAIRS if a in steady and b in steady]
    return [save(fig, out, "learn.png"),
            f"final_return (mean return of the episodes that ended in the last 10 iterations) per seed; "
            f"issue 6 asks for >= {LEARN_THRESHOLD} on every seed:", "",
            table(["variant", *[f"seed {s}" for s in seeds], f">= {LEARN_THRESHOLD}"], rows), "",
            "Seconds per iteration in these default-config runs (iteration 0 includes compilation; steady = "
            "median of iterations 1-end), median over seeds:", "",
            table(["variant", "iteration 0", "steady"], times), "",
            "Ratios of those medians, and seed by seed, for the goals of issues 3 and 4:", "",
            table(["variant", "vs", "steady ratio", "steady ratio per seed", "iteration 0 ratio", "goal"], pairs)]


# ---------------------------------------------------------------- main
def header(runs, failures, directory):
    devices = ", ".join(sorted({r.record["device"] for r in runs}))
    versions = {}
    for r in runs:
        versions.update(r.record["versions"])
    try:
        host = json.loads((directory / "env_cost.json").read_text())["host"]
        cores = f", {host['cpu_count']} CPU cores ({host['machine']})"
    except (OSError, ValueError, KeyError):
        cores = ""
    lines = ["# benchback results", "",
             f"Device: {devices}{cores}. Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items())) + ".",
             f"{len(runs)} runs from {directory}; {len(failures)} files skipped (failed runs, unreadable files)."]
    lines += [f"- skipped: {f}" for f in failures]
    lines += [f"- compiled again after iteration 0 ({r.record['compiles_after_first_iteration']}x), its times include it: "
              f"{r.experiment}/{r.variant} {r.env} {r.size} seed {r.seed}"
              for r in runs if r.record["compiles_after_first_iteration"]]
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
        print(f"error: no run records (schema-1 JSON with status ok) under {args.dir}", file=sys.stderr)
        return 2
    out = args.out or args.dir
    out.mkdir(parents=True, exist_ok=True)
    for name in FIGURES:  # a figure left from an earlier plot of other data would mislead
        (out / name).unlink(missing_ok=True)

    by_experiment = group_by(runs, lambda r: r.experiment)
    overall, sync = by_experiment["overall"], by_experiment["sync"]
    sections = [  # (title, experiment's runs, how to draw them)
        ("Total duration by environment cost", overall, lambda rs: plot_durations(rs, args.dir, out)),
        ("Pairwise speedups", overall, lambda rs: plot_speedups(rs, out)),
        ("Overhead: iteration 0 vs 1-7 vs 8-end", overall, lambda rs: plot_overhead(rs, out)),
        ("Rollout vs update (--sync-timing)", sync, lambda rs: plot_rollout_update(rs, out)),
        ("Compilation on/off", overall + by_experiment["compile"], lambda rs: plot_compilation(rs, out)),
        ("Scaling with --num-envs", by_experiment["scaling"], lambda rs: plot_scaling(rs, out)),
        ("Learning curves", overall, lambda rs: plot_learning_curves(rs, out)),
        ("Every variant learns CartPole-v1 (learn preset)", by_experiment["learn"], lambda rs: plot_learn(rs, out)),
    ]
    lines = header(runs, failures, args.dir)
    for title, section_runs, draw in sections:
        lines += [f"## {title}", ""]
        lines += draw(section_runs) if section_runs else ["No runs for this section."]
        lines.append("")
    (out / "summary.md").write_text("\n".join(lines))
    print(f"wrote {out / 'summary.md'} and {sum((out / name).exists() for name in FIGURES)} figures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
