"""The learning figures, drawn from the summary (report.summary): the return curves of the overall runs, and for each
environment of the learn runs, its return against steps and against seconds beside its final returns."""

import matplotlib.pyplot as plt
import numpy as np

from report.figures import COLORS, save  # report.figures chose the backend: headless
from report.timing import CONFIDENCE


def draw(summary, out) -> None:
    """The learning figures of the summary's sections that have results."""
    if summary.curves:
        learning_curves(summary.curves, out)
    for section in summary.learn:
        learn(section, out)


def draw_curves(ax, curves, label=lambda variant: variant):
    """Each variant's curve, its band shaded."""
    for variant, (x, iqm, low, high) in curves.items():
        ax.plot(x, iqm, color=COLORS.get(variant), label=label(variant))
        ax.fill_between(x, low, high, color=COLORS.get(variant), alpha=0.2)


def learning_curves(cells, out) -> None:
    """One panel per (environment, size) that ran: no empty panels."""
    columns = min(4, len(cells))
    rows = -(-len(cells) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 2.6 * rows), squeeze=False)
    for ax, ((env, size), curves) in zip(axes.flat, cells.items()):
        draw_curves(ax, curves)
        ax.set(title=f"{env}, size {size}", xlabel="env steps", ylabel="episodic return")
        ax.title.set_fontsize(9)
    for ax in axes.flat[len(cells) :]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(labels), fontsize=7)
    save(fig, out, "learning_curves.png", legend_inches=0.3)


def learn(section, out, config: str = "each script's default config") -> None:
    """One environment's learn runs: the return against steps and against seconds, and the final returns with
    rliable's IQM and mean."""
    env, rows, finals = section["env"], section["rows"], section["finals"]
    widths = [3, 3, 2] if rows else [3, 3]  # the final returns' panel where there are enough seeds to compare
    fig, (curves, clock, *bars) = plt.subplots(
        1, len(widths), figsize=(2.25 * sum(widths), 5), gridspec_kw={"width_ratios": widths}
    )
    draw_curves(curves, section["curves"], lambda v: f"{v} ({section['seeds'][v]} seeds)")
    curves.set(xlabel="env steps", ylabel="episodic return (IQM over seeds)", title=f"{env}, {config}")
    curves.legend(fontsize=8)
    draw_curves(clock, section["clock_curves"])
    clock.set(
        xlabel="seconds since train() started (setup and compilation included)",
        ylabel="episodic return (IQM over seeds)",
        title="The same runs against the wall clock",
    )
    for ax, drawn in ((curves, section["curves"]), (clock, section["clock_curves"])):
        if not any(len(x) for x, *_ in drawn.values()):  # runs too short for an episode to end (Freeway's last 2,500 steps)
            ax.text(0.5, 0.5, "no point where every run had reported a return", ha="center", transform=ax.transAxes)
        elif ax is clock:
            ax.set_xscale("log")  # only with points to draw: matplotlib cannot scale an empty axis logarithmically
    for threshold in section["thresholds"]:
        for ax in (curves, clock):
            ax.axhline(threshold, color="gray", lw=0.8, ls=":")
    if rows:
        (bars,) = bars
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
        bars.legend(fontsize=7)
    save(fig, out, section["figure"])
