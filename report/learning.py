"""The learning statistics: pure functions over the runs (report.records' table). Nothing here imports matplotlib:
rliable's `library` (whose bootstrap comes from arch, which loads matplotlib when it is there) is imported where
it is called.

Learning is compared with rliable: IQM, mean and probability of improvement of the final returns, with
stratified-bootstrap intervals; the return curves with their bands; and the wall-clock seconds to each
environment's threshold.
"""

import re
from typing import Optional

import numpy as np
import pandas as pd
from rliable import metrics as rly_metrics
from scipy import stats

from report.records import LEARN_PAIRS, SIZE_ORDER, VARIANTS, final_return, group_by, ordered
from report.timing import CONFIDENCE, MIN_BLOCKS, REFERENCE, SEED, learn_timing, none_if_nan

RLIABLE_REPS = 2_000  # rliable's stratified bootstrap: final returns
CURVE_REPS = 500  # ... and the interval bands of the learning curves, one interval per iteration
# A run "collapsed" when its final_return ends below this: CartPole-v1's default-config runs that reach 500
# and fall away (the tail in which torch_compile's runs were once seen to differ from eager torch's).
COLLAPSED = 425
# Each environment's bars for learning (the time to each is reported): CartPole-v1's 475 (of 500) and Acrobot-v1's
# -100, gymnasium's reward_threshold for both. MinAtar has none: Breakout-MinAtar's 8 was fixed before its learn runs
# from one pilot run (Linen, unused seed 0), but most runs then held at a plateau near 6.4, so 6, below it, was added
# after them (docs/log.md). SpaceInvaders-MinAtar's 20 and 30 were fixed before its learn runs from one pilot run
# (Linen, seed 0: 20 by iteration 30, 30 by iteration 63, 36 at the end); Freeway-MinAtar's 20 and 25 likewise (Linen,
# seed 0: 20.1 at iteration 20, 26.4 at 30, about 29 from 60 on; its episodes last 2,500 steps, so a return arrives
# about every tenth iteration); Asterix-MinAtar's 1.0 and 1.25 likewise (Linen, seed 0: about 0.5 at first, 1.0 from
# about iteration 25, 1.25 from about 37, then a noisy plateau of 1.1-1.7, 1.4 at the end).
# DiscountingChain-bsuite's, UmbrellaChain-bsuite's and the two bandits' were fixed before their learn runs from
# the environment's random and best returns and one pilot run each (Linen, seed 0): DiscountingChain, random about
# 1.02, best 1.1 (the pilot: 1.08 at iteration 15, 1.1 from 25 on); UmbrellaChain, random 0, best 1 (0.8 at 10, about
# 1 from 15 on); BernoulliBandit, random 50, best about 90 (74 at 15, about 81 from 25 on); GaussianBandit, random
# -50, 0 for never trying the second arm, best about 8 (2 at 15, 0 to 7 after).
# Neither MountainCar-v0 (-200, no episode reached the flag) nor MemoryChain-bsuite (its cue is seen only at the
# first step: a policy without memory cannot learn it) learned in the pilot: they have no bar.
# Pendulum-v1's -400 and -200 were fixed before its learn runs: -400 the bar its continuous-action work set (about a
# third of a random policy's cost, near -1,200), -200 from the pilot (Linen, 4 seeds at once, 1M steps: -155 to -161).
# And, on CartPole-v1, the line below which a run that reached 500 "collapsed".
THRESHOLDS = {
    "CartPole-v1": (475.0,),
    "Acrobot-v1": (-100.0,),
    "Breakout-MinAtar": (8.0, 6.0),
    "SpaceInvaders-MinAtar": (20.0, 30.0),
    "Freeway-MinAtar": (20.0, 25.0),
    "Asterix-MinAtar": (1.0, 1.25),
    "DiscountingChain-bsuite": (1.06, 1.09),
    "UmbrellaChain-bsuite": (0.5, 0.8),
    "BernoulliBandit-misc": (70.0, 75.0),
    "GaussianBandit-misc": (-10.0, 0.0),
    "Pendulum-v1": (-400.0, -200.0),
    "MountainCarContinuous-v0": (90.0,),  # gymnasium's reward_threshold: the flag reached, little force spent
    "FourRooms-misc": (0.9, 1.0),  # an episode's return is 1 if it reaches the goal in its 500 steps: 1.0, every one
}
COLLAPSE_BELOW = {"CartPole-v1": COLLAPSED}


def iqm_over_runs(scores):
    """rliable's IQM (metrics.aggregate_iqm: scipy's trim_mean cutting 25% each side), per column at
    once, in NumPy: a curve's bootstrap calls it thousands of times."""
    cut = int(0.25 * len(scores))
    return np.sort(scores, axis=0)[cut : len(scores) - cut].mean(0)


def interval_estimates(scores: dict, func, reps: Optional[int] = None):
    """rliable's point estimates and stratified-bootstrap intervals (RLIABLE_REPS resamples, read at the call), the
    same for the same scores."""
    from rliable import library as rly  # here: arch, behind it, imports matplotlib

    # rliable's bootstraps draw their resamples from NumPy's global generator (np.random.choice in their
    # update_indices) and ignore their random_state: seed the global one for the call, and give its state back.
    state = np.random.get_state()
    np.random.seed(SEED)
    try:
        return rly.get_interval_estimates(scores, func, reps=reps or RLIABLE_REPS)
    finally:
        np.random.set_state(state)


# ---------------------------------------------------------------- return curves
def iqm_band(returns):
    """(IQM over the runs, interval low, interval high) of a (runs, points) array, point by point; the interval is
    rliable's stratified bootstrap."""
    if returns.shape[1] == 0:  # no point where every run has a value
        return np.array([]), np.array([]), np.array([])
    iqm, ci = interval_estimates({"runs": returns[:, None, :]}, lambda s: iqm_over_runs(s[:, 0, :]), reps=CURVE_REPS)
    return iqm["runs"], *ci["runs"]


def curve(group):
    """(env steps, IQM over the runs, interval low, interval high) of episodic_return per iteration, over
    the iterations where every run finished an episode."""
    length = min(len(r.record["episodic_return"]) for r in group)
    returns = np.array([[np.nan if x is None else x for x in r.record["episodic_return"][:length]] for r in group])
    steps = np.arange(1, length + 1) * group[0].record["env_steps"] / len(group[0].record["episodic_return"])
    keep = np.isfinite(returns).all(0)
    return steps[keep], *iqm_band(returns[:, keep])


def clock_curve(group, points=80):
    """(seconds since train() started, IQM, interval low, interval high) of the return against wall-clock time:
    at each time, each run's return is the last one it had reported by then (an iteration in which no episode
    ended reports none: Freeway-MinAtar's episodes span about ten). Over the times where every run has one,
    up to the fastest run's end."""
    ends = [r.record["setup_duration"] + np.cumsum(r.record["iteration_durations"]) for r in group]
    start, stop = max(e[0] for e in ends), min(e[-1] for e in ends)
    seconds = np.geomspace(start, stop, points) if stop > start else np.array([start])
    reported = [pd.Series(r.record["episodic_return"], dtype=float).ffill().to_numpy() for r in group]
    returns = np.array([ret[np.searchsorted(e, seconds, side="right") - 1] for ret, e in zip(reported, ends)])
    keep = np.isfinite(returns).all(0)
    return seconds[keep], *iqm_band(returns[:, keep])


def curves(runs, against=curve):
    """{variant: against(its runs)}, in the variants' order: one curve with its band per variant."""
    groups = group_by(runs, lambda r: r.variant)
    return {variant: against(groups[variant]) for variant in ordered(groups, VARIANTS)}


def learning_curves(runs):
    """{(environment, size): curves of its runs}, for each (environment, size) that ran."""
    cells = sorted({(r.env, r.size) for r in runs}, key=lambda c: (c[0], SIZE_ORDER.index(c[1]) if c[1] in SIZE_ORDER else 9))
    return {(env, size): curves([r for r in runs if (r.env, r.size) == (env, size)]) for env, size in cells}


# ---------------------------------------------------------------- final returns
def probability_of_improvement(finals, pairs) -> dict:
    """{(x, y): (P(a run of x ends higher than a run of y), interval low, high)}: rliable's, with its
    stratified bootstrap."""
    scores = {f"{x} vs {y}": (np.array(finals[x], float)[:, None], np.array(finals[y], float)[:, None]) for x, y in pairs}
    point, ci = interval_estimates(scores, rly_metrics.probability_of_improvement)
    return {(x, y): (float(point[f"{x} vs {y}"]), *map(float, np.ravel(ci[f"{x} vs {y}"]))) for x, y in pairs}


def collapse_difference(a, b, below=COLLAPSED) -> tuple[float, float, float]:
    """The share of runs of a that end below `below` minus b's, with Newcombe's hybrid score interval
    (Statistics in Medicine 17:873, 1998, method 10) built from scipy's Wilson intervals of each share.
    Unlike a bootstrap, it stays honest when a share is 0 of n: resampling no collapses gives none."""
    (ka, na), (kb, nb) = ((int(np.sum(np.array(x) < below)), len(x)) for x in (a, b))
    (pa, la, ua), (pb, lb, ub) = (
        (k / n, *stats.binomtest(k, n).proportion_ci(CONFIDENCE, method="wilson")) for k, n in ((ka, na), (kb, nb))
    )
    difference = pa - pb
    return float(difference), float(difference - np.hypot(pa - la, ub - pb)), float(difference + np.hypot(ua - pa, pb - lb))


def differs(runs, reference, pi, low, high) -> bool:
    """Whether the probability of improvement shows a difference: its interval excludes 0.5. Where every pair of runs
    compares one way the bootstrap cannot vary (an interval of no width, which would call 3 runs against 3 certain):
    then the exact Mann-Whitney U test decides, at the same confidence (3 against 3, all one way: p = 0.1; 4 against
    4: 0.029). Every pair tied is no difference."""
    if low != high:
        return not low <= 0.5 <= high
    if pi == 0.5:
        return False
    return stats.mannwhitneyu(runs, reference, method="exact").pvalue < 1 - CONFIDENCE


def iqm_and_mean(scores):
    return np.array([rly_metrics.aggregate_iqm(scores), rly_metrics.aggregate_mean(scores)])


def learning_statistics(finals, reference=REFERENCE, collapse=COLLAPSED):
    """Per variant, rliable's IQM and mean of final_return with stratified-bootstrap intervals, the
    share of runs that end below `collapse` (if the environment has such a line), and the probability of
    improvement over the reference with its interval, as summary.json rows."""
    scores = {v: np.array(f, dtype=float)[:, None] for v, f in finals.items()}  # (runs, 1 task)
    point, ci = interval_estimates(scores, iqm_and_mean)
    improvement = probability_of_improvement(
        finals, [(v, reference) for v in finals if v != reference and reference in finals]
    )
    rows = []
    for v in ordered(scores, VARIANTS):
        n = len(finals[v])
        pi, pi_low, pi_high = improvement.get((v, reference), (np.nan,) * 3)
        if v == reference:
            verdict = "the reference"
        elif (v, reference) not in improvement or n < MIN_BLOCKS or len(finals[reference]) < MIN_BLOCKS:
            verdict = "too few runs"
        else:
            verdict = (
                "learns like the reference"
                if not differs(finals[v], finals[reference], pi, pi_low, pi_high)
                else "learns better than the reference"
                if pi > 0.5
                else "learns worse than the reference"
            )
        rows.append(
            {
                "variant": v,
                "n_seeds": n,
                "iqm": float(point[v][0]),
                "iqm_ci_low": float(ci[v][0][0]),
                "iqm_ci_high": float(ci[v][1][0]),
                "mean": float(point[v][1]),
                "mean_ci_low": float(ci[v][0][1]),
                "mean_ci_high": float(ci[v][1][1]),
                f"prob_improvement_vs_{reference}": none_if_nan(pi),
                f"prob_improvement_vs_{reference}_ci_low": none_if_nan(pi_low),
                f"prob_improvement_vs_{reference}_ci_high": none_if_nan(pi_high),
                "min": float(np.min(finals[v])),
                **({f"share_below_{collapse}": float(np.mean(np.array(finals[v]) < collapse))} if collapse else {}),
                "verdict": verdict,
            }
        )
    return rows


# ---------------------------------------------------------------- time to threshold
def time_to_threshold(record, threshold):
    """(seconds from the start of train() until an iteration's mean return first reaches `threshold`, setup and
    compilation included; the same without setup and iteration 0), or (None, None) if no iteration does."""
    durations = record["iteration_durations"]
    for i, value in enumerate(record["episodic_return"]):
        if value is not None and value >= threshold:
            return record["setup_duration"] + sum(durations[: i + 1]), sum(durations[1 : i + 1])
    return None, None


def threshold_statistics(groups, threshold):
    """Per variant: the share of runs that reach `threshold` (Wilson interval), and over the runs that reach it the
    IQM of the seconds it took, with and without setup and iteration 0 (rliable's stratified bootstrap)."""
    rows = []
    for v in ordered(groups, VARIANTS):
        times = [time_to_threshold(r.record, threshold) for r in groups[v]]
        reached = np.array([t for t in times if t[0] is not None], float).reshape(-1, 2)
        low, high = stats.binomtest(len(reached), len(times)).proportion_ci(CONFIDENCE, method="wilson")
        row = {
            "variant": v,
            "threshold": threshold,
            "runs": len(times),
            "reached": len(reached),
            "share_reached": len(reached) / len(times),
            "share_reached_ci": [float(low), float(high)],
        }
        for key in ("seconds", "seconds_after_iteration_0"):
            row.update({key: None, f"{key}_ci": None})
        if len(reached) >= MIN_BLOCKS:
            point, ci = interval_estimates(
                {"seconds": reached[:, :1], "seconds_after_iteration_0": reached[:, 1:]}, rly_metrics.aggregate_iqm
            )
            for key in point:
                row.update({key: float(np.ravel(point[key])[0]), f"{key}_ci": [float(x) for x in np.ravel(ci[key])]})
        rows.append(row)
    return rows


# ---------------------------------------------------------------- one environment of the learn preset
def learn(env, runs):
    """One environment's learn runs: the return curves against steps and against seconds, the final returns with
    rliable's statistics, the pairs that differ by one thing, the time to each threshold, and the seconds per
    iteration."""
    groups = group_by(runs, lambda r: r.variant)
    finals = {
        v: [final_return(r.record) for r in sorted(g, key=lambda r: r.seed) if final_return(r.record) is not None]
        for v, g in groups.items()
    }
    finals = {v: f for v, f in finals.items() if len(f) >= MIN_BLOCKS}
    collapse, thresholds = COLLAPSE_BELOW.get(env), THRESHOLDS.get(env, ())
    rows = learning_statistics(finals, collapse=collapse) if finals else []
    pairs = probability_of_improvement(finals, [(a, b) for a, b in LEARN_PAIRS if a in finals and b in finals])
    collapses = {(a, b): collapse_difference(finals[a], finals[b], collapse) for a, b in pairs} if collapse else {}
    return {
        "env": env,
        "figure": f"learn_{re.sub(r'[^A-Za-z0-9.-]+', '-', env)}.png",
        "collapse": collapse,
        "thresholds": thresholds,
        "seeds": {v: len(g) for v, g in groups.items()},
        "variants": ordered(groups, VARIANTS),
        "finals": finals,
        "rows": rows,
        "pairs": pairs,
        "collapses": collapses,
        "reach": [row for threshold in thresholds for row in threshold_statistics(groups, threshold)],
        "curves": curves(runs),
        "clock_curves": curves(runs, against=clock_curve),
        **learn_timing(runs),
    }
