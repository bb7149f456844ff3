"""The search experiment's figure (report.search's numbers): search.png, configurations an hour against how many are
trained at once, a line per variant, with the 95% interval of the median's seconds."""

from report.figures import COLORS, figure_legend, plt, save

FIGURE = "search.png"


def draw(summary: dict, out) -> None:
    rows = summary["rows"] if summary else []
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(7, 4.4))
    for variant in dict.fromkeys(r["variant"] for r in rows):
        mine = sorted((r for r in rows if r["variant"] == variant), key=lambda r: r["configurations"])
        n = [r["configurations"] for r in mine]
        color = COLORS.get(variant, "black")
        ax.plot(n, [r["per_hour"] for r in mine], marker="o", color=color, label=variant)
        if all(r["seconds_ci_low"] is not None for r in mine):  # high seconds: a low rate
            low = [r["per_hour"] - 3600 / r["seconds_ci_high"] for r in mine]
            high = [3600 / r["seconds_ci_low"] - r["per_hour"] for r in mine]
            ax.errorbar(n, [r["per_hour"] for r in mine], yerr=[low, high], fmt="none", color=color, capsize=3)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("configurations trained at once (one program; 1: a run each)")
    ax.set_ylabel("configurations an hour (compilation included)")
    ax.set_title(f"A search's trials: {summary['env']}, {summary['env_steps']:,} env steps each (median, 95% CI)", fontsize=10)
    ax.grid(True, alpha=0.3)
    save(fig, out, FIGURE, legend_inches=figure_legend(fig, ax))
