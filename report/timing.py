"""The timing statistics: pure functions over the runs (report.records' table), each section's numbers as a dict.
Nothing here imports matplotlib.

A ratio is computed per block: the runs of one experiment, env, size, num_envs and seed, which benchmark.sh
runs back to back, so a slow spell of the machine falls on both sides of it. Over the blocks: the geometric
mean, with a 95% bootstrap interval (resampling blocks, so pairs stay pairs).
"""

import functools
import itertools
import warnings
from collections import defaultdict

import numpy as np
from scipy import stats

from report.records import (
    COMPILE_PAIRS,
    DECLARED,
    LEARN_PAIRS,
    SPEEDUP_VARIANTS,
    VARIANTS,
    group_by,
    median_by,
    ordered,
    sizes_of,
    warm,
)

FRAMEWORK = {v.name: v.framework for v in DECLARED}  # a setting (torch_compile+graphs) has its script's
CONFIDENCE = 0.95
MIN_BLOCKS = 3  # fewer gives no interval worth the name
BOOTSTRAP = dict(n_resamples=10_000, confidence_level=CONFIDENCE)
SEED = 0  # the same records give the same intervals: every bootstrap starts from it
REFERENCE = "jax_linen"  # the answer: each variant's time over this one's
METRICS = {  # seconds, per run
    "steady": lambda r: r.steady,
    "iteration 0": lambda r: r.record["iteration_durations"][0],
    "total": lambda r: r.total,
    "rollout": lambda r: steady_part(r, "rollout_durations"),
    "update": lambda r: steady_part(r, "update_durations"),
}
SPEEDUP_METRICS = ("steady", "iteration 0", "total")
COLD_METRICS = {"iteration 0", "total"}  # measured only on runs that compiled from cold (records.warm)
# Iteration 0 holds tracing and compilation; 1-7 may still warm up (caches, allocator); 8-end is steady.
WINDOWS = {"iteration 0": slice(0, 1), "iterations 1-7": slice(1, 8), "iterations 8-end": slice(8, None)}


def steady_part(run, key) -> float:
    """Median of a --sync-timing part (rollout or update) over iterations 1-end."""
    durations = run.record[key]
    return float(np.median(durations[1:] or durations))


def block(run):
    return run.experiment, run.env, run.size, run.num_envs, run.seed


def paired_ratios(runs, a, b, metric):
    """time(b) / time(a) in every block where both ran (both cold, for a metric that holds compilation)."""
    times = {(r.variant, block(r)): METRICS[metric](r) for r in runs if metric not in COLD_METRICS or not warm(r.record)}
    return [times[b, k] / times[a, k] for (v, k) in times if v == a and (b, k) in times]


def sorted_first(statistic, values, axis=-1):
    return statistic(np.sort(values, axis=axis), axis=axis)


def interval(values, statistic) -> tuple[float, float]:
    """scipy's bootstrap interval (BCa) of statistic(values), or the percentile one where BCa is undefined."""
    # Each resample sorted first, so that every reordering of one sample gives the same bits: BCa counts the resamples
    # below the estimate (a tie as half: scipy's _percentile_of_score), and a reordered copy of the sample, summed in
    # another order, would land a last bit above or below it as the CPU's rounding decides, moving the interval's ends
    # between two machines (docs/log.md, "Intervals that depended on the CPU").
    statistic = functools.partial(sorted_first, statistic)
    for method in ("BCa", "percentile"):
        with warnings.catch_warnings():  # BCa of a sample this small may be undefined: nan, then percentile
            warnings.simplefilter("ignore")
            ci = stats.bootstrap((values,), statistic, method=method, rng=np.random.default_rng(SEED), **BOOTSTRAP)
        low, high = ci.confidence_interval
        if np.isfinite(low) and np.isfinite(high):
            return float(low), float(high)
    value = float(statistic(values))
    return value, value  # every resample gives the same value: all the values are equal


def geometric_ratio(per_block) -> tuple:
    """Per-block ratios' geometric mean and its 95% bootstrap interval (None, None from fewer than 2 blocks): what a
    study's ratio over blocks is, as compare computes a sweep's."""
    logs = np.log(np.asarray(per_block, float))
    low, high = (float(x) for x in np.exp(interval(logs, np.mean))) if len(logs) >= 2 else (None, None)
    return float(np.exp(logs.mean())), low, high


def ratio_verdict(low, high, n_blocks) -> str:
    if n_blocks < MIN_BLOCKS:
        return "too few runs"
    return "A faster" if low > 1 else "B faster" if high < 1 else "no difference detected"


def none_if_nan(x):
    return None if x is None or not np.isfinite(x) else float(x)


def compare(runs, a, b, metric, size, env=None):
    """The ratio time(b) / time(a) for one size (and one env, or every env) and metric, as a summary.json row;
    None without a block."""
    runs = [r for r in runs if r.size == size and env in (None, r.env)]
    ratios = paired_ratios(runs, a, b, metric)
    if not ratios:
        return None
    logs = np.log(ratios)
    low = high = np.nan
    if len(ratios) >= MIN_BLOCKS:
        low, high = np.exp(interval(logs, np.mean))
    experiments = sorted({r.experiment for r in runs if r.variant in (a, b)})
    return {
        "a": a,
        "b": b,
        "metric": metric,
        "size": size,
        "env": env,
        "experiment": "+".join(experiments),
        "ratio": float(np.exp(logs.mean())),
        "ci_low": none_if_nan(low),
        "ci_high": none_if_nan(high),
        "n_blocks": len(ratios),
        "verdict": ratio_verdict(low, high, len(ratios)),
        "blocks": ratios,
    }


def median_with_interval(values) -> tuple[float, float, float]:
    """The median and its bootstrap interval ((nan, nan) under MIN_BLOCKS values)."""
    if len(values) < MIN_BLOCKS:
        return float(np.median(values)), np.nan, np.nan
    return float(np.median(values)), *interval(np.array(values, float), np.median)


# ---------------------------------------------------------------- the answer: each variant's time over the reference's
def against_reference(row) -> dict:
    """A compare() row of (REFERENCE, variant), as the answer reads it: the variant's time over the reference's."""
    verdict = {"A faster": f"slower than {REFERENCE}", "B faster": f"faster than {REFERENCE}"}
    kept = {k: v for k, v in row.items() if k not in ("a", "b")}
    return {"variant": row["b"], **kept, "verdict": verdict.get(row["verdict"], row["verdict"])}


def suite(env: str) -> str:
    """The library an environment comes from, as the scripts' make_env tells them apart."""
    return "Craftax" if env.startswith("Craftax") else "gymnax"


def answer_rows(runs, metric="steady"):
    """Each variant's (or setting's) `metric` time over the reference's: per size over the environments of one suite
    (env None), and per (environment, size) cell. A suite is pooled apart: Craftax's step costs hundreds of times a
    gymnax one's, and a mean over both would describe neither."""
    rows = []
    # A setting counts where its runs share blocks with the reference's (the gpu preset's CUDA graphs in overall)
    variants = ordered({r.variant for r in runs} - {REFERENCE}, VARIANTS)
    for size in sizes_of(runs):
        for name, pool in sorted(
            group_by([r for r in runs if r.size == size], lambda r: suite(r.env)).items(), key=gymnax_first
        ):
            envs = sorted({r.env for r in pool})
            for variant, env in itertools.product(variants, [None, *envs]):
                row = compare(pool, REFERENCE, variant, metric, size, env)
                if row:
                    rows.append({**against_reference(row), "suite": name})
    return rows


def gymnax_first(item):  # the study's environments first
    return item[0] != "gymnax", item[0]


def answer_statistics(runs):
    """The answer's rows, per size (env None) and per cell; the variants, sizes and environments they cover; and
    for the environments that ran at more than one size, the parameter count of each size. None without a row."""
    rows = answer_rows(runs)
    if not rows:
        return None
    cells = [r for r in rows if r["env"]]
    envs = sorted({r["env"] for r in cells})
    pooled = [r for r in rows if r["env"] is None]
    params = {(r.env, r.size): r.record.get("param_count") for r in runs}
    return {
        "rows": rows,
        "cells": cells,
        "pooled": pooled,
        "envs": envs,
        "variants": ordered({r["variant"] for r in rows}, VARIANTS),
        "sizes": [s for s in sizes_of(runs) if any(r["size"] == s for r in cells)],
        "params": params,
        "size_envs": [  # the size axis: the environments that ran at more than one size
            e
            for e in envs
            if len({r["size"] for r in cells if r["env"] == e}) > 1
            and None not in [params.get((e, r["size"])) for r in cells if r["env"] == e]
        ],
        "spread": {  # each pooled row's cells
            (r["variant"], r["size"], r["suite"]): [
                c["ratio"] for c in cells if (c["variant"], c["size"], c["suite"]) == (r["variant"], r["size"], r["suite"])
            ]
            for r in pooled
        },
    }


# ---------------------------------------------------------------- the other sections
def overhead(runs, cold=None):
    """Setup and iteration 0 (compilation) in seconds, and the later windows' seconds per iteration: per (variant,
    size, window), the median over the runs with its interval. Iteration 0 from the runs that compiled from cold:
    those of `runs` (by default), or of `cold` (the compile experiment's, where the timed runs had warm caches)."""
    values = defaultdict(list)  # (variant, size, window): one value per run
    for r in cold if cold is not None else runs:
        if not warm(r.record):
            values[r.variant, r.size, "iteration 0"].append(r.record["iteration_durations"][0])
    for r in runs:
        values[r.variant, r.size, "setup"].append(r.record["setup_duration"])
        for window, cut in WINDOWS.items():
            if window != "iteration 0" and r.record["iteration_durations"][cut]:
                values[r.variant, r.size, window].append(float(np.mean(r.record["iteration_durations"][cut])))
    return {
        "sizes": sizes_of(runs),
        "variants": ordered([r.variant for r in runs], VARIANTS),
        "windows": ["setup", *WINDOWS],
        "medians": {key: median_with_interval(v) for key, v in values.items()},
    }


def rollout_update(runs, floors=None):
    """The --sync-timing runs: per (variant, size), the median seconds of the rollout and of the update; per part,
    each variant's time over the reference's, block by block; and with `floors` ({env: seconds}, bench/handover.py),
    each torch rollout split into that floor (env steps and hand-overs) and the rest."""
    sizes, variants = sizes_of(runs), ordered([r.variant for r in runs], VARIANTS)
    parts = {}
    for key, group in group_by(runs, lambda r: (r.variant, r.size)).items():
        # iteration 0 is left out: it holds the compilation of both parts
        parts[key] = tuple(
            float(np.median([np.median(r.record[f][1:] or r.record[f]) for r in group]))
            for f in ("rollout_durations", "update_durations")
        )
    ratios = {
        metric: [
            r for v in variants if v != REFERENCE for size in sizes for r in [compare(runs, REFERENCE, v, metric, size)] if r
        ]
        for metric in ("rollout", "update")
    }
    return {"sizes": sizes, "variants": variants, "parts": parts, "ratios": ratios, "handover": handover(runs, floors or {})}


def handover(runs, floors: dict) -> list:
    """Per (env, size, torch variant) with a measured floor: the median rollout (iterations 1-end, over seeds), the
    floor under it and its share, and the reference's rollout in the same cell beside it."""
    rollout = median_by(runs, lambda r: (r.variant, r.env, r.size), lambda r: METRICS["rollout"](r))
    torch = [v for v in ordered([r.variant for r in runs], VARIANTS) if FRAMEWORK.get(v) == "torch"]
    sizes = sizes_of(runs)
    cells = sorted({(r.env, r.size) for r in runs if r.env in floors}, key=lambda cell: (cell[0], sizes.index(cell[1])))
    return [
        {
            "env": env,
            "size": size,
            "variant": v,
            "rollout_s": rollout[v, env, size],
            "floor_s": floors[env],
            "floor_share": floors[env] / rollout[v, env, size],
            f"{REFERENCE}_rollout_s": rollout.get((REFERENCE, env, size)),
        }
        for env, size in cells
        for v in torch
        if (v, env, size) in rollout
    ]


def stacks(runs, floors=None):
    """The stacks runs (a script on environments of its own stack beside it on gymnax's, every run --sync-timing): per
    size over the environments and per cell, each variant's iteration, rollout + GAE and update over the reference's;
    the median seconds of each part; the torch rollouts' hand-over floor (rollout_update's). None without a row."""
    rows = {metric: answer_rows(runs, metric) for metric in ("steady", "rollout", "update")}
    if not rows["steady"]:
        return None
    timed = rollout_update(runs, floors)
    return {
        **rows,
        "sizes": timed["sizes"],
        "variants": timed["variants"],
        "parts": timed["parts"],
        "handover": timed["handover"],
    }


def compilation(runs):
    """The compile experiment's pairs (A compiled, B the same with compilation off or a setting of its script):
    time(B) / time(A), block by block. None without a pair."""
    sizes = sizes_of(runs)
    rows = [compare(runs, on, off, metric, size) for size in sizes for on, off in COMPILE_PAIRS for metric in SPEEDUP_METRICS]
    rows = [r for r in rows if r]
    return {"sizes": sizes, "rows": rows} if rows else None


def memory(runs):
    """Peak memory per variant and size, from the records that hold it (schema 2): the host's resident set,
    and on a GPU the peak of each framework's allocator, summed. None without a record that holds it."""
    rows, groups = [], group_by(runs, lambda r: (r.size, r.variant))
    for size in sizes_of(runs):
        for variant in ordered([v for s, v in groups if s == size], VARIANTS):
            group = groups[size, variant]
            host = [r.record["peak_host_memory_mb"] for r in group if r.record.get("peak_host_memory_mb") is not None]
            gpu = [
                sum(x or 0 for x in r.record["gpu"]["peak_memory_mb"].values())
                for r in group
                if (r.record.get("gpu") or {}).get("peak_memory_mb")
            ]
            if host:
                rows.append(
                    {
                        "variant": variant,
                        "size": size,
                        "runs": len(host),
                        "host_mb_median": float(np.median(host)),
                        "host_mb_max": float(np.max(host)),
                        "gpu_mb_median": float(np.median(gpu)) if gpu else None,
                    }
                )
    return rows or None


def durations(runs):
    """The steady iteration, iteration 0 and the total duration per (variant, env, size), each the median over seeds."""
    cell = lambda r: (r.variant, r.env, r.size)
    totals = median_by(runs, cell, lambda r: r.total)
    return {
        "steady": median_by(runs, cell, lambda r: r.steady),
        "first": median_by(runs, cell, lambda r: r.record["iteration_durations"][0]),
        "totals": totals,
        "envs": sorted({r.env for r in runs}),
        "variants": ordered([k[0] for k in totals], VARIANTS),
        "sizes": sizes_of(runs),
    }


def speedups(runs, cold=None):
    """Pairwise ratios of every two variants, per metric and size: {metric: rows}. None without a pair. The metrics
    that hold compilation from `cold` where given (the compile experiment's runs, where `runs` had warm caches)."""
    sizes = sizes_of(runs)
    variants = ordered([r.variant for r in runs if r.variant in SPEEDUP_VARIANTS], SPEEDUP_VARIANTS)
    pairs = list(itertools.combinations(variants, 2))
    source = {m: cold if cold is not None and m in COLD_METRICS else runs for m in SPEEDUP_METRICS}
    rows = {m: [compare(source[m], a, b, m, size) for size in sizes for a, b in pairs] for m in SPEEDUP_METRICS}
    rows = {m: [r for r in rs if r] for m, rs in rows.items()}
    return {"sizes": sizes, "rows": rows} if any(rows.values()) else None


def steps_per_second(run) -> float:
    return run.record["env_steps"] / len(run.record["iteration_durations"]) / run.steady


def scaling(runs):
    """Env steps per second per (variant, num_envs), median over seeds."""
    sps = median_by(runs, lambda r: (r.variant, r.num_envs), steps_per_second)
    return {"sps": sps, "variants": ordered([k[0] for k in sps], VARIANTS), "num_envs": sorted({k[1] for k in sps})}


def learn_timing(runs):
    """One environment's learn runs: per variant the medians over seeds of iteration 0 and of the steady iteration,
    and the ratios of the pairs that differ by one thing (LEARN_PAIRS), seed by seed."""
    ratios = [
        compare(runs, a, b, metric, size)
        for a, b in LEARN_PAIRS
        for metric in ("steady", "iteration 0")
        for size in sizes_of(runs)
    ]
    return {
        "first": median_by(runs, lambda r: r.variant, lambda r: r.record["iteration_durations"][0]),
        "steady": median_by(runs, lambda r: r.variant, lambda r: r.steady),
        "ratios": [r for r in ratios if r],
    }
