"""summary.md's learning section (the learn preset): per environment, the final returns, the time to each
threshold, the pairs that differ by one thing and the seconds per iteration."""

from report.tables import RATIO_TEXT, fmt, image, improvement, table, with_interval
from report.timing import CONFIDENCE, REFERENCE


def learn(sections) -> list:
    return [line for s in sections for line in (f"### {s['env']}", "", *learn_env(s), "")]


def reach_cell(r, key) -> str:
    return with_interval(r[key], *(r[f"{key}_ci"] or (None, None))) if r[key] is not None else "too few runs reach it"


def learn_env(s) -> list:
    """One environment's learn runs: the final returns, the time to each threshold, the pairs, the seconds per
    iteration."""
    collapse, thresholds, collapses = s["collapse"], s["thresholds"], s["collapses"]
    bars = " and ".join(f"{t:g}" for t in thresholds)
    key = f"prob_improvement_vs_{REFERENCE}"
    lines = [
        image(s["figure"]),
        f"final_return (mean return of the episodes that ended in the last 10 iterations) over seeds: IQM and "
        f"mean with {CONFIDENCE:.0%} stratified-bootstrap intervals, the lowest run, and the probability that a "
        f"run of the variant ends higher than a run of {REFERENCE} (rliable). A variant learns like the reference "
        "when that probability's interval contains 0.5."
        + (f" Dotted: the threshold{'s' * (len(thresholds) > 1)}, {bars}." if thresholds else ""),
        "",
        table(
            [
                "variant",
                "seeds",
                "IQM [95% CI]",
                "mean [95% CI]",
                "lowest",
                *([f"below {collapse}"] if collapse else []),
                f"P(improvement over {REFERENCE})",
                "verdict",
            ],
            [
                [
                    r["variant"],
                    r["n_seeds"],
                    with_interval(r["iqm"], r["iqm_ci_low"], r["iqm_ci_high"], 4),
                    with_interval(r["mean"], r["mean_ci_low"], r["mean_ci_high"], 4),
                    fmt(r["min"], 4),
                    *([f"{r[f'share_below_{collapse}']:.0%}"] if collapse else []),
                    improvement(r.get(key), r.get(f"{key}_ci_low"), r.get(f"{key}_ci_high"), lambda x: fmt(x, 2))
                    if r.get(key) is not None
                    else "n/a",
                    r["verdict"],
                ]
                for r in s["rows"]
            ],
        ),
        "",
    ]
    if s["reach"]:
        lines += [
            f"Wall-clock to learn: seconds from the start of train() until an iteration's mean return first reaches "
            f"the threshold ({bars}), IQM over the runs that reach it with its {CONFIDENCE:.0%} stratified-bootstrap "
            "interval; the same without setup and iteration 0 (compilation); and the share of runs that reach it "
            "(Wilson interval). The interpreter's start and the imports come before train() and are not counted.",
            "",
        ]
        for threshold in thresholds:
            lines += [
                table(
                    [
                        "variant",
                        "runs",
                        f"reach {threshold:g} [95% CI]",
                        "seconds to it [95% CI]",
                        "without setup and iteration 0 [95% CI]",
                    ],
                    [
                        [
                            r["variant"],
                            r["runs"],
                            with_interval(r["share_reached"], *r["share_reached_ci"], 2),
                            reach_cell(r, "seconds"),
                            reach_cell(r, "seconds_after_iteration_0"),
                        ]
                        for r in s["reach"]
                        if r["threshold"] == threshold
                    ],
                ),
                "",
            ]
    if s["pairs"]:
        lines += [
            "The same probability between the variants that differ by one thing (the same runs)"
            + (
                f", and the difference in the share of runs that end below {collapse} with Newcombe's score interval:"
                if collapse
                else ":"
            ),
            "",
            table(
                [
                    "A",
                    "B",
                    "P(a run of A ends higher than one of B) [95% CI]",
                    "verdict",
                    *([f"share below {collapse}, A - B [95% CI]", "verdict"] if collapse else []),
                ],
                [
                    [
                        a,
                        b,
                        with_interval(pi, low, high, 2),
                        "no difference detected" if low <= 0.5 <= high else f"{a if low > 0.5 else b} learns better",
                        *(
                            [
                                with_interval(*collapses[a, b], 2),
                                "no difference detected"
                                if collapses[a, b][1] <= 0 <= collapses[a, b][2]
                                else f"{a if collapses[a, b][1] > 0 else b} collapses more often",
                            ]
                            if collapse
                            else []
                        ),
                    ]
                    for (a, b), (pi, low, high) in s["pairs"].items()
                ],
            ),
            "",
        ]
    first, steady = s["first"], s["steady"]
    lines += [
        "Seconds per iteration in these runs (iteration 0 includes compilation; steady = median of iterations "
        "1-end), median over seeds:",
        "",
        table(["variant", "iteration 0", "steady"], [[v, fmt(first[v]), fmt(steady[v])] for v in s["variants"]]),
    ]
    if s["ratios"]:
        lines += [
            "",
            f"Ratios time(B) / time(A) seed by seed, {RATIO_TEXT}",
            "",
            table(
                ["metric", "A", "B", "ratio [95% CI]", "blocks", "verdict"],
                [
                    [
                        r["metric"],
                        r["a"],
                        r["b"],
                        with_interval(r["ratio"], r["ci_low"], r["ci_high"]),
                        r["n_blocks"],
                        r["verdict"],
                    ]
                    for r in s["ratios"]
                ],
            ),
        ]
    return lines
