"""The pieces summary.md is written with: a markdown table, a number as the report writes it, a value with its
interval, a figure's link, and the table of ratios with the sentence that says how they were computed."""

import numpy as np

from report.timing import CONFIDENCE, MIN_BLOCKS

RATIO_TEXT = (
    "per block (same experiment, env, size, num_envs and seed), then the geometric mean over the "
    f"blocks with its {CONFIDENCE:.0%} bootstrap interval. Verdict: A or B faster when the interval "
    f"excludes 1, no difference detected when it contains 1, too few runs under {MIN_BLOCKS} blocks."
)


def table(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows])


def fmt(x, digits=3) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{digits}g}"


def with_interval(value, low, high, digits=3) -> str:
    """'1.00 [0.97, 1.03]', or the value alone where there is no interval."""
    if low is None:
        return fmt(value, digits)
    return f"{fmt(value, digits)} [{fmt(low, digits)}, {fmt(high, digits)}]"


def improvement(value, low, high, number) -> str:
    """A probability of improvement and its interval, each written by `number`. Where every pair of runs ties, or
    every pair compares one way, every bootstrap resample gives the same value: the interval has no width and says
    nothing of the uncertainty, so the cell says which it is in words instead."""
    if low is None:
        return number(value)
    if low == high == value and value in (0.0, 0.5, 1.0):
        return f"{number(value)} ({'every pair of runs ties' if value == 0.5 else 'every pair of runs one way'}: no interval)"
    return f"{number(value)} [{number(low)}, {number(high)}]"


def image(name: str) -> str:
    """A figure the report's figures wrote beside summary.md."""
    return f"![{name}]({name})\n"


def ratio_table(rows) -> str:
    return table(
        ["size", "A", "B", "ratio [95% CI]", "blocks", "verdict"],
        [
            [r["size"], r["a"], r["b"], with_interval(r["ratio"], r["ci_low"], r["ci_high"]), r["n_blocks"], r["verdict"]]
            for r in rows
        ],
    )
