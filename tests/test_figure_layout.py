"""The front page's figures read at a glance: report.figures.layout_problems finds a text outside the canvas, two
texts over each other and a legend over a point; answer.png (from the committed records) and SAC's offpolicy.png (on
cells with the longest names a sweep makes) have none."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from conftest import ROOT  # noqa: E402
from report import figures, front, offpolicy_figures  # noqa: E402


def test_the_check_finds_a_text_outside_the_canvas_texts_overlapping_and_a_legend_over_a_point():
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.set_title("a title far too long for a figure three inches wide, running off its right edge")
    ax.text(0.5, 0.5, "one text here", transform=ax.transAxes)
    ax.text(0.52, 0.5, "another text", transform=ax.transAxes)
    ax.plot([0.95], [0.95], "o", label="a point")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="upper right")
    fig.canvas.draw()
    problems = figures.layout_problems(fig)
    assert any("outside the canvas" in p for p in problems)
    assert any("'one text here' overlaps 'another text'" in p for p in problems)
    assert any("the legend covers a point of 'a point'" in p for p in problems)
    plt.close(fig)


def test_a_figure_laid_out_well_passes():
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([1, 2, 3], [1, 4, 9], "o-", label="squares")
    ax.set_xlabel("x"), ax.set_ylabel("y"), ax.set_title("squares")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.canvas.draw()
    assert figures.layout_problems(fig) == []
    plt.close(fig)


def test_the_front_pages_answer_figure_from_the_committed_records_has_no_problem(tmp_path):
    result = front.answer_columns(front.load(ROOT / "results"))
    figures.front(result, tmp_path)
    assert figures.LAYOUT["answer.png"] == []


def test_the_off_policy_figure_has_no_problem_with_a_sweeps_cells_and_variants(tmp_path):
    cells = [
        "Pendulum-v1, c (256x256), 1 env, UTD 1",
        "Pendulum-v1, s (64x64), 1 env, UTD 1",
        "Pendulum-v1, s (64x64), 1 env, steps alone (UTD 0)",
        "Pendulum-v1, s (64x64), 1 env, UTD 1, full buffer",
        "Pendulum-v1, s (64x64), 16 envs, UTD 1",
        "Pendulum-v1, s (64x64), 1 env, UTD 8",
        "MountainCarContinuous-v0, c (256x256), 1 env, UTD 1",
    ]
    variants = {"jax_nnx": 0.9, "jax_equinox": 1.1, "torch": 9.5, "torch+torchenv": 8.0, "torch_compile": 12.0}
    variants["torch_compile+torchenv"] = 11.0
    rows = [
        {"cell": c, "variant": v, "ratio": r, "ci_low": r * 0.9, "ci_high": r * 1.1}
        for c in cells
        for v, r in variants.items()
    ]
    offpolicy_figures.draw({"timing": rows}, tmp_path)
    assert figures.LAYOUT[offpolicy_figures.FIGURE] == []


def test_the_off_policy_scaling_figure_draws_a_line_per_variant_where_cells_differ_in_their_envs_alone(tmp_path):
    """dqn-scaling's cells (1 to 256 envs of the gridworld) and its seven variants: a panel, no problem in it; a set
    whose cells differ in more than their envs (the dqn preset's two at each of two envs) gets no figure."""
    variants = ["jax_linen", "torch", "torch_compile", "torch+gymnasium", "torch+gymnasium-async"]
    variants += ["torch_compile+gymnasium", "torch_compile+gymnasium-async"]
    rows = []
    for n in (1, 4, 16, 64, 256):
        for k, v in enumerate(variants):
            seconds = 0.5 * (1 + k) / n**0.5
            cell = f"FourRooms-misc, d (120x84), {n} envs, UTD 0.1"
            rows.append(
                dict(cell=cell, env="FourRooms-misc", size="d", num_envs=n, updates_per_step=0.1, full_buffer=False)
                | dict(variant=v, steady_seconds=seconds, steady_ci=[seconds * 0.9, seconds * 1.2])
                | dict(env_steps_per_second=2560 / seconds)
            )
    offpolicy_figures.draw_scaling({"timing": rows, "algorithm": "DQN"}, tmp_path)
    assert figures.LAYOUT[offpolicy_figures.SCALING] == []
    two_counts = [r for r in rows if r["num_envs"] in (1, 16)]
    offpolicy_figures.draw_scaling({"timing": two_counts}, tmp_path / "none")
    assert not (tmp_path / "none" / offpolicy_figures.SCALING).exists()
