"""SAC's figure (report.offpolicy's numbers): offpolicy.png, one row per cell, each variant's steady iteration over
jax_linen's with its 95% interval, on a log axis."""

from report.figures import COLORS, figure_legend, plt, save
from report.timing import REFERENCE

FIGURE = "offpolicy.png"


def draw(sac: dict, out) -> None:
    rows = [r for r in sac["timing"] if r["variant"] != REFERENCE and r.get("ratio") is not None]
    if not rows:
        return
    cells = list(dict.fromkeys(r["cell"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fig, ax = plt.subplots(figsize=(9, 1.2 + 0.3 * len(cells) * len(variants) / 2 + 0.3 * len(cells)))
    height = 0.8 / len(variants)
    for k, variant in enumerate(variants):
        mine = {r["cell"]: r for r in rows if r["variant"] == variant}
        ys = [i + (k - (len(variants) - 1) / 2) * height for i, c in enumerate(cells) if c in mine]
        found = [mine[c] for c in cells if c in mine]
        xs = [r["ratio"] for r in found]
        low = [r["ratio"] - (r["ci_low"] if r.get("ci_low") is not None else r["ratio"]) for r in found]
        high = [(r["ci_high"] if r.get("ci_high") is not None else r["ratio"]) - r["ratio"] for r in found]
        ax.errorbar(xs, ys, xerr=[low, high], fmt="o", color=COLORS.get(variant, "black"), label=variant, capsize=3)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.set_yticks(range(len(cells)), [c.replace(", ", "\n", 1) for c in cells], fontsize=8)  # the env, then the rest
    ax.set_ylim(len(cells) - 0.5, -0.5)  # the first cell on top
    ax.set_xlabel(f"steady iteration, x {REFERENCE}'s time (geometric mean over blocks, 95% CI)")
    ax.set_title(f"{sac.get('algorithm', 'SAC')}: each variant's time over {REFERENCE}'s, per cell", fontsize=10)
    save(fig, out, FIGURE, legend_inches=figure_legend(fig, ax))
