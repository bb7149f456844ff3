"""The timing figures, drawn from the summary (report.summary) as PNGs beside summary.md: one for each of its
sections that has results."""

import itertools

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from report.figures import (  # report.figures chose the backend: headless
    COLORS,
    ENV_STYLES,
    MARKERS,
    draw_cells,
    draw_ratios,
    figure_legend,
    interval_bars,
    name_envs,
    save,
    size_axes,
)
from report.records import COMPILE_PAIRS
from report.timing import REFERENCE, SPEEDUP_METRICS


def draw(summary, out) -> None:
    """The timing figures of the summary's sections that have results."""
    for section, draw_section in (
        (summary.answer, answer_figures),
        (summary.overhead, overhead),
        (summary.rollout_update, rollout_update),
        (summary.compilation, compilation),
        (summary.durations, durations),
        (summary.speedups, speedups),
        (summary.scaling, scaling),
        (summary.seeds, seeds),
        (summary.stacks, stacks),
    ):
        if section:
            draw_section(section, out)


# ---------------------------------------------------------------- the sections' figures
def answer_figures(section, out) -> None:
    """The study's answer: each variant's steady iteration over the reference's against the environment's cost (one
    panel per size), and against the model's size for the environments that ran at several."""
    cells, envs, variants, sizes = section["cells"], section["envs"], section["variants"], section["sizes"]
    x, xlabel, log = section["axis"]
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
        name_envs(ax, shown, marked=section["host_waits"])
        if set(shown) & set(section["host_waits"]):
            ax.set_title(f"size {size} (\N{DAGGER} the GPU waits for the host in its step)", fontsize=9)
    save(fig, out, "answer_env_cost.png", legend_inches=figure_legend(fig, axes[0, 0]))
    params, size_envs = section["params"], section["size_envs"][: len(ENV_STYLES)]
    if not size_envs:
        return
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
    save(fig, out, "answer_size.png")


def overhead(section, out) -> None:
    """Setup and iteration 0 (compilation) in seconds, and the later windows' seconds per iteration."""
    sizes, variants, windows, medians = section["sizes"], section["variants"], section["windows"], section["medians"]
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
    save(fig, out, "overhead.png")


def rollout_update(section, out) -> None:
    """The shares of rollout and update in the iteration (not seconds: the variants differ by orders of magnitude;
    the seconds are on the bars); below them, each part's time over the reference's, block by block."""
    sizes, variants, parts, ratios = section["sizes"], section["variants"], section["parts"], section["ratios"]
    panels = 2 if any(ratios.values()) else 1  # no second row without jax_linen to divide by
    fig, axes = plt.subplots(panels, len(sizes), figsize=(5 * len(sizes), 4.5 * panels), squeeze=False)
    for ax, size in zip(axes[1] if panels == 2 else [], sizes):
        for j, metric in enumerate(ratios):
            cell = [r for r in ratios[metric] if r["size"] == size]
            xs = np.array([variants.index(r["b"]) for r in cell]) + 0.4 * j
            ax.bar(
                xs,
                [r["ratio"] for r in cell],
                0.4,
                yerr=interval_bars(cell),
                capsize=3,
                color=[COLORS.get(r["b"]) for r in cell],
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
    save(fig, out, "rollout_update.png")


def compilation(section, out) -> None:
    """The compile experiment's pairs (A compiled, B with compilation off or a setting): time(B) / time(A), per pair
    and metric."""
    sizes, rows = section["sizes"], section["rows"]
    pairs = [pair for pair in COMPILE_PAIRS if any((r["a"], r["b"]) == pair for r in rows)]  # those with runs
    fig, axes = size_axes(sizes)
    for ax, size in zip(axes[0], sizes):
        for j, metric in enumerate(SPEEDUP_METRICS):
            cell = [r for r in rows if (r["size"], r["metric"]) == (size, metric)]
            x = np.array([pairs.index((r["a"], r["b"])) for r in cell]) + 0.27 * j
            bars = ax.bar(x, [r["ratio"] for r in cell], 0.27, color=str(0.25 + 0.25 * j), label=metric)  # grays
            ax.errorbar(x, [r["ratio"] for r in cell], yerr=interval_bars(cell), fmt="none", color="k", capsize=3)
            ax.bar_label(bars, fmt="%.3g", fontsize=6)
        ax.set_xticks(np.arange(len(pairs)) + 0.27, [f"{on}\nvs {off}" for on, off in pairs], fontsize=7)
        ax.axhline(1, color="gray", lw=0.8, ls="--")
        ax.set(ylabel="time(B) / time(A), for A vs B", title=f"Compilation on/off, size {size}")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    save(fig, out, "compilation.png")


def durations(section, out) -> None:
    totals, envs, variants, sizes = section["totals"], section["envs"], section["variants"], section["sizes"]
    x, xlabel, log = section["axis"]
    fig, ax = plt.subplots(figsize=(8, 5))
    for variant, size in itertools.product(variants, sizes):
        points = sorted((x[e], t) for (v, e, z), t in totals.items() if (v, z) == (variant, size))
        if points:
            ax.plot(*zip(*points), color=COLORS.get(variant), marker=MARKERS.get(size, "x"), lw=0.6, alpha=0.8)
    for variant in variants:
        ax.scatter([], [], color=COLORS.get(variant), label=variant)
    for size in sizes:
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
    save(fig, out, "duration.png")


def speedups(section, out) -> None:
    """Pairwise ratios of every two variants, a row of panels per metric measured (a sweep on warm caches has no
    iteration 0 or total), a panel per size, with their intervals."""
    sizes, rows = section["sizes"], section["rows"]
    metrics = [m for m in SPEEDUP_METRICS if rows[m]]
    pairs = max(sum(r["size"] == size for r in rows[m]) for m in metrics for size in sizes)
    height = len(metrics) * (0.9 + 0.22 * pairs)
    fig, axes = plt.subplots(len(metrics), len(sizes), figsize=(2.6 + 3.4 * len(sizes), height), squeeze=False)
    for row, metric in zip(axes, metrics):
        for ax, size in zip(row, sizes):
            mine = [r for r in rows[metric] if r["size"] == size]
            draw_ratios(ax, mine)
            ax.set(title=f"{metric}, size {size}", xlabel="time(B) / time(A)")
            ax.title.set_fontsize(8)
            if not mine:
                ax.text(0.5, 0.5, f"no pair measured at size {size}", transform=ax.transAxes, ha="center", fontsize=8)
    save(fig, out, "speedup.png")


def scaling(section, out) -> None:
    sps = section["sps"]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for v in section["variants"]:
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
    save(fig, out, "scaling.png")


def seeds(section, out) -> None:
    """Agent steps per second against the seeds trained at once, a panel per environment: a variant with N at once
    as a line with its intervals; one seed alone as a dashed level, which N runs one after another keep."""
    envs, rows = section["envs"], section["rows"]
    fig, axes = plt.subplots(1, len(envs), figsize=(5.5 * len(envs), 4.5), squeeze=False)
    top = max(r["num_seeds"] for r in rows)
    for ax, env in zip(axes[0], envs):
        for v in dict.fromkeys(r["variant"] for r in rows if r["env"] == env):
            mine = sorted((r for r in rows if (r["env"], r["variant"]) == (env, v)), key=lambda r: r["num_seeds"])
            bars = np.array(
                [
                    [r["agent_sps"] - (r["sps_low"] or r["agent_sps"]), (r["sps_high"] or r["agent_sps"]) - r["agent_sps"]]
                    for r in mine
                ]
            ).T
            ns, sps = [r["num_seeds"] for r in mine], [r["agent_sps"] for r in mine]
            ax.errorbar(ns, sps, yerr=bars, color=COLORS.get(v), marker="o", ms=4, lw=1, capsize=2, label=v)
            ax.hlines(sps[0], 1, top, colors=COLORS.get(v), linestyles="--", lw=0.8)  # one seed at a time
        ax.set(xlabel="seeds trained at once (--num-seeds)", ylabel="agent steps per second (steady)", title=env)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    axes[0][0].legend(fontsize=7, title="dashed: one seed at a time", title_fontsize=7)
    save(fig, out, "seeds.png")


def stacks(section, out) -> None:
    """Each variant's iteration and rollout + GAE over the reference's, per size over the environments (a point with
    its interval; each environment's cell a small dot): a row per part, a panel per size."""
    metrics = {"steady": "iteration", "rollout": "rollout + GAE"}
    sizes = section["sizes"]
    variants = [v for v in section["variants"] if v != REFERENCE]
    fig, axes = plt.subplots(len(metrics), len(sizes), figsize=(1.2 + 0.7 * len(variants) * len(sizes), 8), squeeze=False)
    for row, (metric, part) in zip(axes, metrics.items()):
        for ax, size in zip(row, sizes):
            for i, v in enumerate(variants):
                pooled = [r for r in section[metric] if (r["variant"], r["size"], r["env"]) == (v, size, None)]
                cells = [r["ratio"] for r in section[metric] if (r["variant"], r["size"]) == (v, size) and r["env"]]
                ax.scatter(np.full(len(cells), i), cells, s=12, color=COLORS.get(v), alpha=0.5)
                if pooled:
                    ax.errorbar(
                        [i], [pooled[0]["ratio"]], yerr=interval_bars(pooled), color=COLORS.get(v), marker="o", capsize=4
                    )
            ax.axhline(1, color="gray", lw=0.8, ls="--")
            ax.set_xticks(range(len(variants)), variants, rotation=90, fontsize=7)
            ax.set_xlim(-0.5, len(variants) - 0.5)
            ax.set_yscale("log")
            ax.set(title=f"{part}, size {size}", ylabel=f"x {REFERENCE}'s time")
            ax.title.set_fontsize(9)
    save(fig, out, "stacks.png")
