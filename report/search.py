"""The search experiment: what a hyperparameter search's trials cost in each framework, one configuration a run (the
way studies.search trains a trial) against a batch of N trained at once (--configs: one vmapped program, the way
`studies.search --batch N` trains a batch). Pure functions over the runs; nothing here imports matplotlib.

Every block (seed) runs each cell back to back, from cold: one configuration of every variant, then each JAX script's
batches. A configuration's seconds are its run's whole time (setup, compilation and every iteration, which a search
pays for each trial or batch) over the configurations it trained; a ratio is taken within a block, then the geometric
mean over the blocks with its bootstrap interval (report.timing's way).
"""

import numpy as np

from report.records import VARIANTS, ordered
from report.timing import MIN_BLOCKS, REFERENCE, interval, median_with_interval, none_if_nan


def configurations(run) -> int:
    """The configurations a run trained at once: its batch's (the record's configs), else one."""
    return len(run.record.get("configs") or [None])


def seconds_per_configuration(run) -> float:
    return run.total / configurations(run)


def block_ratio(runs, top: tuple, bottom: tuple) -> dict:
    """seconds a configuration of top (variant, N) over bottom's, block by block: the geometric mean and its interval."""
    of = lambda key: {r.seed: seconds_per_configuration(r) for r in runs if (r.variant, configurations(r)) == key}
    above, below = of(top), of(bottom)
    ratios = [above[seed] / below[seed] for seed in sorted(above.keys() & below.keys())]
    if not ratios:
        return {"ratio": None, "ci_low": None, "ci_high": None, "n_blocks": 0}
    logs = np.log(ratios)
    low, high = np.exp(interval(logs, np.mean)) if len(ratios) >= MIN_BLOCKS else (np.nan, np.nan)
    return {
        "ratio": float(np.exp(logs.mean())),
        "ci_low": none_if_nan(low),
        "ci_high": none_if_nan(high),
        "n_blocks": len(ratios),
    }


def search(runs) -> dict:
    """Per variant and N: seconds a configuration (median over blocks, with its interval) and configurations an hour,
    the share of the first iteration (compilation), peak host memory, and two ratios of seconds a configuration: over
    Linen's one configuration a run, and over the variant's own. None without a run."""
    runs = [r for r in runs if r.experiment == "search"]
    if not runs:
        return None
    rows = []
    for variant in ordered({r.variant for r in runs}, VARIANTS):
        for n in sorted({configurations(r) for r in runs if r.variant == variant}):
            group = [r for r in runs if (r.variant, configurations(r)) == (variant, n)]
            seconds, low, high = median_with_interval([seconds_per_configuration(r) for r in group])
            first = [r.record["iteration_durations"][0] / r.total for r in group]
            memory = [r.record["peak_host_memory_mb"] for r in group if r.record.get("peak_host_memory_mb")]
            rows.append(
                {
                    "variant": variant,
                    "configurations": n,
                    "runs": len(group),
                    "seconds": seconds,
                    "seconds_ci_low": none_if_nan(low),
                    "seconds_ci_high": none_if_nan(high),
                    "per_hour": 3600 / seconds,
                    "first_iteration_share": float(np.median(first)),
                    "host_mb_median": float(np.median(memory)) if memory else None,
                    "over_reference_one": block_ratio(runs, (variant, n), (REFERENCE, 1)),
                    "over_own_one": block_ratio(runs, (variant, n), (variant, 1)) if n > 1 else None,
                }
            )
    record = runs[0].record
    return {
        "algorithm": record.get("algorithm", "ppo"),  # an off-policy record names its own
        "env": record["env_id"],
        "env_steps": record["env_steps"],  # each configuration's budget
        "blocks": len({r.seed for r in runs}),
        "rows": rows,
    }


def ratio_text(row) -> str:
    if not row or row["ratio"] is None:
        return "n/a"
    if row["ci_low"] is None:
        return f"{row['ratio']:.3g}x ({row['n_blocks']} blocks)"
    none = ", no difference detected" if row["ci_low"] <= 1 <= row["ci_high"] else ""
    return f"{row['ratio']:.3g}x [{row['ci_low']:.3g}, {row['ci_high']:.3g}]{none}"


def markdown(summary: dict) -> str:
    """The search section of summary.md."""
    head = (
        f"## A search's trials: one configuration a run, or a batch at once\n\n"
        f"{summary['algorithm'].upper()} on {summary['env']}, {summary['env_steps']:,} environment steps a"
        f" configuration, {summary['blocks']} blocks. A"
        " configuration's seconds: its run's whole time (setup, compilation, iterations) over the configurations it"
        " trained, median over blocks [95% interval]. Ratios of seconds a configuration, per block, geometric mean"
        f" [95% bootstrap interval]: over {REFERENCE}'s one configuration a run, and over the variant's own.\n\n"
    )
    lines = [
        "| variant | configurations at once | seconds a configuration | configurations an hour | first iteration's share"
        f" | over {REFERENCE}, one a run | over its own one a run | peak host MB |",
        "| --- | ---: | --- | ---: | ---: | --- | --- | ---: |",
    ]
    for row in summary["rows"]:
        n = row["configurations"]
        spread = f" [{row['seconds_ci_low']:.3g}, {row['seconds_ci_high']:.3g}]" if row["seconds_ci_low"] is not None else ""
        memory = f"{row['host_mb_median']:.0f}" if row["host_mb_median"] else "n/a"
        lines.append(
            f"| {row['variant']} | {row['configurations']} | {row['seconds']:.3g}{spread} | {row['per_hour']:.0f}"
            f" | {row['first_iteration_share']:.0%} | {'1' if (row['variant'], n) == (REFERENCE, 1) else ratio_text(row['over_reference_one'])}"
            f" | {ratio_text(row['over_own_one']) if row['over_own_one'] else '1 (itself)'} | {memory} |"
        )
    return head + "\n".join(lines) + "\n"


def front_markdown(summary: dict) -> str:
    """README's copy: a row per variant, a column per number of configurations at once, each cell configurations an
    hour and the seconds a configuration over Linen's one a run (the answer's way: a time over Linen's), with its
    interval; the peak host memory of the largest batch."""
    counts = sorted({r["configurations"] for r in summary["rows"]})
    header = " | ".join("one a run" if n == 1 else f"{n} at once" for n in counts)
    lines = [f"| variant | {header} | peak host memory, largest batch |", "| --- |" + " --- |" * len(counts) + " ---: |"]
    for variant in dict.fromkeys(r["variant"] for r in summary["rows"]):
        mine = {r["configurations"]: r for r in summary["rows"] if r["variant"] == variant}
        cells = []
        for n in counts:
            row = mine.get(n)
            if row is None:
                cells.append("no batch")
                continue
            first = (variant, n) == (REFERENCE, 1)
            cells.append(f"{row['per_hour']:,.0f} an hour" + ("" if first else f", {ratio_text(row['over_reference_one'])}"))
        largest = mine[max(mine)]
        memory = f"{largest['host_mb_median']:.0f} MiB" if largest["host_mb_median"] else "n/a"
        lines.append(f"| {variant} | {' | '.join(cells)} | {memory} |")
    budget = f"{summary['env']}, {summary['env_steps']:,} environment steps a configuration, {summary['blocks']} blocks"
    return (
        f"{summary['algorithm'].upper()} on {budget}; a configuration's time includes its run's setup and compilation,"
        f" and each ratio is that time over {REFERENCE}'s one a run.\n\n" + "\n".join(lines) + "\n"
    )
