"""The seeds experiment: several seeds trained at once (--num-seeds N, one vmapped program) against N runs of one seed
one after another. Pure functions over the runs; nothing here imports matplotlib.

Every (environment, N) block of a seed runs each variant's N seeds at once beside one seed of every variant, back to
back, so a ratio of two of them is paired as the other experiments' are (report.timing).
"""

import numpy as np

from report.records import VARIANTS, ordered
from report.timing import MIN_BLOCKS, interval, median_with_interval, none_if_nan


def agent_steps_per_second(run) -> float:
    """The env steps of every seed per second of a steady iteration."""
    args = run.record["args"]
    return run.num_seeds * args["num_envs"] * args["num_steps"] / run.steady


def at_once_over_one_by_one(runs, variant, env, n) -> dict:
    """time(N seeds at once) / (N x time(one seed)) of one variant, block by block (seed by seed): below 1, vmap
    gives more seeds per hour than running them one after another."""
    one = {r.seed: r.steady for r in runs if (r.variant, r.env, r.num_seeds) == (variant, env, 1)}
    ratios = [
        r.steady / (n * one[r.seed]) for r in runs if (r.variant, r.env, r.num_seeds) == (variant, env, n) and r.seed in one
    ]
    if not ratios:
        return {"ratio": None, "ci_low": None, "ci_high": None, "n_blocks": 0}
    logs = np.log(ratios)
    low = high = np.nan
    if len(ratios) >= MIN_BLOCKS:
        low, high = np.exp(interval(logs, np.mean))
    return {
        "ratio": float(np.exp(logs.mean())),
        "ci_low": none_if_nan(low),
        "ci_high": none_if_nan(high),
        "n_blocks": len(ratios),
    }


def seeds(runs):
    """Per environment, variant and N: agent steps per second (median over blocks, with its interval), peak host
    memory, and N at once over N one by one. None without a run."""
    rows = []
    for env in sorted({r.env for r in runs}):
        for variant in ordered({r.variant for r in runs if r.env == env}, VARIANTS):
            for n in sorted({r.num_seeds for r in runs if (r.env, r.variant) == (env, variant)}):
                group = [r for r in runs if (r.env, r.variant, r.num_seeds) == (env, variant, n)]
                sps, low, high = median_with_interval([agent_steps_per_second(r) for r in group])
                memory = [r.record["peak_host_memory_mb"] for r in group if r.record.get("peak_host_memory_mb")]
                row = {"env": env, "variant": variant, "num_seeds": n, "runs": len(group)}
                row |= {"agent_sps": sps, "sps_low": none_if_nan(low), "sps_high": none_if_nan(high)}
                row["host_mb_median"] = float(np.median(memory)) if memory else None
                row["at_once_over_one_by_one"] = at_once_over_one_by_one(runs, variant, env, n) if n > 1 else None
                rows.append(row)
    return {"rows": rows, "envs": sorted({r["env"] for r in rows})} if rows else None
