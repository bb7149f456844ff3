"""The off-policy figures (report.offpolicy's numbers): offpolicy.png, one row per cell, each variant's steady
iteration over jax_linen's with its 95% interval, on a log axis; and offpolicy_scaling.png where cells differ only in
their number of environments (3 or more: the dqn-scaling preset's), each variant's environment steps a second
against it."""

from report.figures import COLORS, figure_legend, plt, save
from report.timing import REFERENCE

FIGURE = "offpolicy.png"
SCALING = "offpolicy_scaling.png"


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


def draw_scaling(s: dict, out) -> None:
    """A panel per group of cells alike but for their number of envs (3 counts or more), a line per variant: the env
    steps a second of its median steady iteration, with the median's 95% interval."""
    groups = {}
    for r in s["timing"]:
        groups.setdefault((r["env"], r["size"], r["updates_per_step"], r["full_buffer"]), []).append(r)
    groups = {k: rows for k, rows in groups.items() if len({r["num_envs"] for r in rows}) >= 3}
    if not groups:
        return
    fig, axes = plt.subplots(1, len(groups), figsize=(6.4 * len(groups), 4.4), squeeze=False)
    for ax, rows in zip(axes[0], groups.values()):
        for variant in dict.fromkeys(r["variant"] for r in rows):
            mine = sorted((r for r in rows if r["variant"] == variant), key=lambda r: r["num_envs"])
            n = [r["num_envs"] for r in mine]
            rate = [r["env_steps_per_second"] for r in mine]
            color = COLORS.get(variant, "black")
            ax.plot(n, rate, marker="o", color=color, label=variant)
            if all(r["steady_ci"] for r in mine):  # seconds' interval, as steps a second: high seconds, low rate
                per = [r["env_steps_per_second"] * r["steady_seconds"] for r in mine]  # an iteration's env steps
                ax.fill_between(
                    n,
                    [k / r["steady_ci"][1] for k, r in zip(per, mine)],
                    [k / r["steady_ci"][0] for k, r in zip(per, mine)],
                    color=color,
                    alpha=0.2,
                    linewidth=0,
                )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("environments stepped together")
        ax.set_ylabel("environment steps a second (steady iteration)")
        ax.set_title(rows[0]["cell"].split(", ")[0] + ", " + rows[0]["cell"].split(", ")[1], fontsize=10)
        ax.grid(True, alpha=0.3)
    axes[0][0].set_title(
        f"{s.get('algorithm', 'SAC')}, {axes[0][0].get_title()}: env steps a second against envs (median, 95% CI)",
        fontsize=9,
    )
    save(fig, out, SCALING, legend_inches=figure_legend(fig, axes[0][0]))
