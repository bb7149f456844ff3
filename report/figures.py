"""The timing figures, drawn from the summary (report.summary) as PNGs beside summary.md; and what every figure
shares: one colour per variant (the colour its script declares), plain ticks on log axes, the saving."""

import itertools

import matplotlib

matplotlib.use("Agg")  # headless: no display needed, nothing opens a window
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator  # noqa: E402

from report.records import COMPILE_PAIRS, DECLARED  # noqa: E402
from report.timing import REFERENCE, SPEEDUP_METRICS  # noqa: E402

COLORS = {v.name: v.color for v in DECLARED}
MARKERS = {"s": "o", "m": "s", "l": "^"}
ENV_STYLES = ["-", "--", ":", "-."]  # one line style per environment where a figure has several
FIGURES = [  # and one learn_ENV.png per environment of the learn runs
    "answer_env_cost.png",
    "answer_size.png",
    "duration.png",
    "speedup.png",
    "overhead.png",
    "rollout_update.png",
    "compilation.png",
    "scaling.png",
    "seeds.png",
    "stacks.png",
    "learning_curves.png",
    "learn.png",  # before one figure per environment: removed when found
]


def save(fig, out, name: str, legend_inches: float = 0.0) -> None:
    """Write fig as out/name, leaving legend_inches free at the top for a figure legend."""
    for ax in fig.axes:
        plain_log_ticks(ax)
    fig.tight_layout(rect=(0, 0, 1, 1 - legend_inches / fig.get_figheight()))
    fig.savefig(out / name, dpi=110)
    plt.close(fig)


def figure_legend(fig, ax) -> float:
    """ax's legend above the whole figure, in as many rows as the figure's width needs (about 1.7 inches an entry,
    so that no entry is cut off): the inches it takes, for save's legend_inches."""
    handles, labels = ax.get_legend_handles_labels()
    ncol = min(len(labels), max(1, int(fig.get_figwidth() / 1.7)))
    fig.legend(handles, labels, loc="upper center", ncol=ncol, fontsize=8)
    return 0.05 + 0.22 * -(-len(labels) // ncol)


def size_axes(sizes):
    """A figure with one subplot per model size, side by side: (fig, axes[0][i] for size i)."""
    return plt.subplots(1, len(sizes), figsize=(5 * len(sizes), 4.5), squeeze=False)


def plain(v) -> str:
    """A tick label: 0.5, 2, 30, 20k, 1.5M."""
    return f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k" if v >= 1e4 else f"{v:g}"


def plain_log_ticks(ax) -> None:
    """Plain tick labels (0.5, 2, 30) on log axes; minor ticks labelled over less than a decade (all of them) or
    a few decades (2s and 5s). Over up to a factor of 4 (ratios near 1; one environment's cost, half to twice it) the
    log ticks leave most of the axis unlabelled (nothing between 1 and 2) or crowd its top (90k, 100k): there, evenly
    spaced round ticks (0.9, 1, 1.1, ...) instead."""
    for axis, (low, high) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if axis.get_scale() == "log":
            axis.set_major_formatter(FuncFormatter(lambda v, _: plain(v)))
            low, high = sorted((low, high))
            even = [t for t in MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]).tick_values(low, high) if low <= t <= high]
            if high / low <= 4 * (1 + 1e-9) and len(even) >= 3:
                axis.set_major_locator(FixedLocator(even))
                axis.set_minor_locator(NullLocator())
                continue
            digits = "123456789" if high / low < 10 else "25" if high / low < 300 else ""
            axis.set_minor_formatter(FuncFormatter(lambda v, _, digits=digits: plain(v) if f"{v:e}"[0] in digits else ""))


def interval_bars(rows):
    """matplotlib's yerr for the rows' intervals: (below, above) each ratio, 0 where there is none. Clipped at 0:
    when every block has the same ratio, the interval and the mean may differ by a rounding either way."""
    bars = np.array(
        [[r["ratio"] - r["ci_low"], r["ci_high"] - r["ratio"]] if r["ci_low"] is not None else [0, 0] for r in rows]
    ).T.reshape(2, -1)
    return np.maximum(bars, 0)


def draw_ratios(ax, rows):
    """One row per pair, top to bottom, its label level: its blocks as dots, the geometric mean as a tick with its
    interval."""
    y = -np.arange(len(rows))
    for i, r in zip(y, rows):
        ax.scatter(r["blocks"], np.full(len(r["blocks"]), i), s=10, color="tab:blue", alpha=0.5)
        ax.vlines(r["ratio"], i - 0.3, i + 0.3, color="k")
    ax.errorbar([r["ratio"] for r in rows], y, xerr=interval_bars(rows), fmt="none", color="k", capsize=4)
    ax.axvline(1, color="gray", lw=0.8, ls="--")
    ax.set_yticks(y, [f"{r['a']} vs {r['b']}" for r in rows], fontsize=7)
    ax.set_ylim(-max(len(rows), 1) + 0.5, 0.5)
    ax.set_xscale("log")


def name_envs(ax, x, gap=8, marked=()) -> None:
    """The environments' names along the x-axis, at their x positions (the axis' scale and limits set): a name that
    would overlap the one to its left moves right, `gap` points from it, with a line to its position; a name in
    `marked` ends in a dagger."""
    ax.get_xlim()  # settles autoscaling, which transData alone does not
    points = 72 / ax.figure.dpi
    placed = -float("inf")
    for env, position in sorted(x.items(), key=lambda item: item[1]):
        at = ax.transData.transform((position, 1))[0] * points
        placed = max(at, placed + gap)
        ax.annotate(
            f"{env} \N{DAGGER}" if env in marked else env,
            (position, 0),
            xycoords=("data", "axes fraction"),
            rotation=90,
            fontsize=6,
            xytext=(2 + placed - at, 3),
            textcoords="offset points",
            alpha=0.6,
            arrowprops=dict(arrowstyle="-", lw=0.4, alpha=0.4) if placed > at else None,
        )


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


# ---------------------------------------------------------------- the front page's answer (report.front)
def front(result, out) -> None:
    """answer.png: each variant's multiple of the reference's time, column by column as the front page's table has
    them, with its interval; the model sizes over the gymnax environments joined by a line per variant."""
    from report.front import column_header  # (report.front imports this module only when it draws)

    columns, variants = result["columns"], [v for v in result["variants"] if v != REFERENCE]
    fig, ax = plt.subplots(figsize=(11, 5))
    sizes = [i for i, c in enumerate(columns) if c["column"].env is None]  # the size trend: one line per variant
    for k, v in enumerate(variants):
        mine = [(i, c["cells"][v]) for i, c in enumerate(columns) if v in c["cells"]]
        xs = [i + 0.09 * (k - (len(variants) - 1) / 2) for i, _ in mine]
        rows = [row for _, row in mine]
        ax.errorbar(
            xs, [r["ratio"] for r in rows], yerr=interval_bars(rows), fmt="o", ms=5, capsize=3, color=COLORS.get(v), label=v
        )
        trend = [(x, r["ratio"]) for (i, r), x in zip(mine, xs) if i in sizes]
        if len(trend) > 1:
            ax.plot(*zip(*trend), color=COLORS.get(v), lw=0.8, alpha=0.6)
    ax.axhline(1, color=COLORS[REFERENCE], lw=1, ls="--", label=f"{REFERENCE} (1)")
    # The questions apart (model sizes, expensive environments, a GPU), each region named by where it ran
    where = [front_device(c) for c in columns]
    starts = [i for i in range(len(columns)) if i == 0 or (i in sizes) != (i - 1 in sizes) or where[i] != where[i - 1]]
    for start, end in zip(starts, [*starts[1:], len(columns)]):
        if start:
            ax.axvline(start - 0.5, color="0.8", lw=0.8)
        ax.text(
            (start + end - 1) / 2,
            1.005,
            where[start],
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    labels = [column_header(c).replace(": " if ": " in column_header(c) else ", ", "\n", 1) for c in columns]
    ax.set_xticks(range(len(columns)), labels, fontsize=8)
    ax.set_xlim(-0.5, len(columns) - 0.5)
    ax.set_yscale("log")
    ax.set_ylabel(f"steady iteration, x {REFERENCE}'s time")
    ax.set_title(f"Each variant's time per iteration over {REFERENCE}'s, with its 95% interval", pad=18)
    save(fig, out, "answer.png", legend_inches=figure_legend(fig, ax))


def front_device(entry) -> str:
    """Where a column's runs ran, in a few words: "2-core CPU" or the GPU's name."""
    record = entry["reference"]["runs"][0].record
    return f"{record['cpu']['cores']}-core CPU" if record["device"] == "cpu" else record["device"]


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
