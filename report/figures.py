"""What every figure shares: one colour per variant (the colour its script declares), plain ticks on log axes, the
saving; and the front page's answer figure (report.front). The timing figures are drawn in report.timing_figures."""

import textwrap

import matplotlib

matplotlib.use("Agg")  # headless: no display needed, nothing opens a window
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullLocator  # noqa: E402

from report.records import DECLARED_BY_ALGORITHM  # noqa: E402
from report.timing import REFERENCE  # noqa: E402

# every algorithm's variants, PPO's last: its colour where another algorithm's script has the same name
COLORS = {v.name: v.color for declared in reversed(DECLARED_BY_ALGORITHM.values()) for v in declared}
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


LAYOUT = {}  # name -> what layout_problems found in the figure saved under it last (the tests read it)


def save(fig, out, name: str, legend_inches: float = 0.0) -> None:
    """Write fig as out/name, leaving legend_inches free at the top for a figure legend; what layout_problems finds
    in it is kept in LAYOUT[name]."""
    for ax in fig.axes:
        plain_log_ticks(ax)
    fig.tight_layout(rect=(0, 0, 1, 1 - legend_inches / fig.get_figheight()))
    fig.savefig(out / name, dpi=110)
    LAYOUT[name] = layout_problems(fig)
    plt.close(fig)


def layout_problems(fig) -> list:
    """What a reader would stumble on, as drawn: a text (title, axis label, tick label, legend entry, note) reaching
    outside the canvas, two texts overlapping, a legend over a plotted point."""
    fig.canvas.draw()  # at the figure's own dpi: savefig's renderer may be another's
    renderer = fig.canvas.get_renderer()
    canvas = fig.bbox
    hidden = set()  # tick labels matplotlib keeps beyond the axis's view, which it does not draw
    for ax in fig.axes:
        for axis, (low, high), k in ((ax.xaxis, ax.get_xlim(), 0), (ax.yaxis, ax.get_ylim(), 1)):
            low, high = sorted((low, high))
            for t in axis.get_ticklabels(which="both"):
                if not low - 1e-9 * abs(high - low) <= t.get_position()[k] <= high + 1e-9 * abs(high - low):
                    hidden.add(t)
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text().strip() and t not in hidden]
    boxes = [(t.get_text().replace("\n", " "), t.get_window_extent(renderer)) for t in texts]
    problems = []
    for label, box in boxes:
        if box.x0 < canvas.x0 - 1 or box.y0 < canvas.y0 - 1 or box.x1 > canvas.x1 + 1 or box.y1 > canvas.y1 + 1:
            problems.append(f"{label!r} reaches outside the canvas")
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            if box_a.overlaps(box_b) and box_a.width and box_b.width:
                inter = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0), min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
                if inter[0] > 1 and inter[1] > 1:
                    problems.append(f"{a!r} overlaps {b!r}")
    legends = [lg for lg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if lg is not None]
    for legend in legends:
        frame = legend.get_window_extent(renderer)
        for ax in fig.axes:
            for line in ax.get_lines():
                if line.get_marker() in (None, "None", "") or not line.get_visible():
                    continue
                points = ax.transData.transform(np.column_stack(line.get_data()).astype(float))
                inside = (
                    (points[:, 0] > frame.x0)
                    & (points[:, 0] < frame.x1)
                    & (points[:, 1] > frame.y0)
                    & (points[:, 1] < frame.y1)
                )
                if inside.any():
                    problems.append(f"the legend covers a point of {line.get_label()!r}")
    return problems


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


# ---------------------------------------------------------------- the front page's answer (report.front)
def front(result, out) -> None:
    """answer.png: each variant's multiple of the reference's time, column by column as the front page's table has
    them, with its interval; the model sizes over the gymnax environments joined by a line per variant."""
    columns, variants = result["columns"], [v for v in result["variants"] if v != REFERENCE]
    fig, ax = plt.subplots(figsize=(12, 5.5))
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
            "\n".join(textwrap.wrap(where[start], 6 + 14 * (end - start))),  # a region's name within its width
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=8,
        )
    labels = ["\n".join(textwrap.wrap(c["header"], 18)) for c in columns]  # narrow: neighbours do not touch
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
