"""The plan cut into parts, for benchmark.sh --part (the gpu preset's): whole blocks, one group at a time, each within
the preset's part_minutes by the runs' estimated costs."""

import itertools

from bench.plan_runs import block_of, group_of, seeds_of

# Of a part's minutes, one is kept for what a sweep measures before its runs (env costs, the host-cost probe).
MEASURES_S = 60


def parts_of(runs: list, p: dict) -> list:
    """Each run's part, 1..: the plan, in its order, cut into parts of whole blocks, a group's runs (the preset's
    groups) never with another group's, each at most the preset's part_minutes by its estimate (a block longer alone
    is a part alone); all part 1 without part_minutes."""
    if not p["part_minutes"]:
        return [1] * len(runs)
    limit, seconds = p["part_minutes"] * 60 - MEASURES_S, run_seconds(p["for_gpu"])
    part, k, used, last = [], 0, 0.0, None
    for key, members in itertools.groupby(runs, key=lambda run: (group_of(run, p["groups"] or []), block_of(run))):
        members = list(members)
        cost = sum(seconds(run) for run in members)
        if k == 0 or key[0] != last or used + cost > limit:
            k, used = k + 1, 0.0
        used, last = used + cost, key[0]
        part += [k] * len(members)
    return part


def run_seconds(gpu: bool):
    """run -> its estimated seconds (bench/run_costs.py), for cutting a plan into parts: a run nothing prices (or
    every run, if the costs cannot be read) at a minute."""
    try:
        from bench import run_costs

        prices = run_costs.Prices(gpu=gpu)
    except Exception:  # a part's cut is never worth stopping the sweep for
        return lambda run: 60.0
    return lambda run: prices.seconds(run.variant, run.env, run.size, int(run.iterations), seeds_of(run)) or 60.0
