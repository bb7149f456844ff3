"""summary.md from the summary (report.summary): its sections in the order the study reads them, each with its
figure, what the figure shows, and the tables behind it. A section without results is left out."""

import functools

import numpy as np

from report.learning_markdown import learn
from report.records import DECLARED, FLOOR_FILES, described, floor_file
from report.tables import RATIO_TEXT, fmt, image, ratio_table, table, with_interval
from report.timing import CONFIDENCE, REFERENCE, SPEEDUP_METRICS


def render(summary) -> str:
    """summary.md: the header, then each section that has results."""
    # The tool that measured the hand-over floor the timing sections split with, named as it was then
    tool = FLOOR_FILES.get(floor_file(summary.header["directory"]))
    split, stacked = (functools.partial(write, tool=tool) for write in (rollout_update, stacks))
    sections = [
        (f"The answer: each variant's time over {REFERENCE}'s", summary.answer, answer_markdown),
        ("Overhead: iteration 0 vs 1-7 vs 8-end", summary.overhead, overhead),
        ("Rollout vs update (--sync-timing)", summary.rollout_update, split),
        ("Compilation on/off", summary.compilation, compilation),
        ("Peak memory", summary.memory, memory),
        ("Durations by environment cost", summary.durations, durations),
        ("Pairwise speedups", summary.speedups, speedups),
        ("Scaling with --num-envs", summary.scaling, scaling),
        ("Seeds at once (--num-seeds) against one by one", summary.seeds, seeds),
        ("Environment stacks: each framework on environments of its own", summary.stacks, stacked),
        ("Learning curves", summary.curves, curves),
        ("Does every variant learn? (learn preset)", summary.learn, learn),
    ]
    lines = markdown_header(summary.header)
    for title, section, write in sections:
        if section:
            lines += [f"## {title}", "", *write(section), ""]
    return "\n".join(lines)


def markdown_header(h) -> list:
    lines = [
        "# benchback results",
        "",
        f"Device: {h['device']}. Versions: " + ", ".join(f"{k} {v}" for k, v in sorted(h["versions"].items())) + ".",
        f"{h['runs']} runs from {h['directory']}; {len(h['failures'])} files skipped (failed runs, unreadable files).",
    ]
    lines += [f"- skipped: {f}" for f in h["failures"]]
    lines += [
        f"- compiled again after iteration 0 ({count}x), its times include it: {experiment}/{variant} {env} {size} seed {seed}"
        for count, experiment, variant, env, size, seed in h["recompiled"]
    ]
    caches = h["caches"]
    if caches["warm"]:  # records from before the caches were shared name none: every run compiled from cold
        anyway = caches["compiled_anyway"]
        lines.append(
            f"- compiler caches: {caches['warm']} runs were given the sweep's warm caches, {caches['cold']} compiled from"
            f" cold (the compile figures); of the warm, {caches['warm'] - len(anyway)} loaded their programs (their"
            f" iteration 0 is not a compile time)" + (f" and {len(anyway)} compiled them afresh" if anyway else "")
        )
        if anyway:
            lines.append(
                "- compiled afresh, the caches holding none of their programs yet (a variant's first run on an environment"
                " and size fills them): "
                + ", ".join(
                    f"{experiment}/{variant} {env} {size} seed {seed}" for experiment, variant, env, size, seed in anyway
                )
            )
    if h.get("smoke_test"):
        lines.append(
            f"- {h['smoke_test']} runs step fewer than 256 steps a rollout (the quick preset's smoke test): start-up and"
            " compiling dominate their time, so their multiples test the sweep and the figures and answer nothing"
        )
    if h.get("one_steady"):
        lines.append(
            f"- {h['one_steady']} runs timed at most one iteration after iteration 0 (2 iterations in all, or fewer):"
            " their steady iteration is that one iteration's time, not a median, so a slow spell of the machine moves it"
            " whole (a run of iteration 0 alone has iteration 0's, compiling included)"
        )
    if h.get("no_reference"):
        lines.append(
            f"- no {REFERENCE} run among these records: every multiple (the answer, rollout vs update, the stacks) is of"
            f" its time in the same block, so none is shown; sweep with {REFERENCE} among --variants"
        )
    if (h["machines"] or 0) > 1:
        lines.append(f"- timed on {h['machines']} machines with this GPU, each block on one")
    return lines + [""]


def answer_markdown(s) -> list:
    x, cells, variants, spread = s["axis"][0], s["cells"], s["variants"], s["spread"]
    key = lambda r: (r["variant"], r["size"], r["suite"])  # a pooled row's cells in spread
    lines = [
        image("answer_env_cost.png"),
        f"Each variant's steady iteration (median of iterations 1-end) as a multiple of {REFERENCE}'s, {RATIO_TEXT} "
        "Points: one environment each, with its interval; the dashed line: as fast as jax_linen."
        + "".join(f" \N{DAGGER} {env}: {why}, in every variant alike." for env, why in s["host_waits"].items()),
        "",
    ]
    if s["size_envs"]:
        lines += [image("answer_size.png"), "The same ratios against the model's size, one line style per environment.", ""]
    return lines + [
        "Per size, over its environments (every block of that size; Craftax's pooled apart from gymnax's):",
        "",
        table(
            [
                "size",
                "variant",
                f"x {REFERENCE}'s time [95% CI]",
                "blocks",
                "verdict",
                "environments",
                "lowest cell",
                "highest cell",
            ],
            [
                [
                    r["size"],
                    r["variant"],
                    with_interval(r["ratio"], r["ci_low"], r["ci_high"]),
                    r["n_blocks"],
                    r["verdict"],
                    f"{len(spread[key(r)])} {r['suite']}",
                    fmt(min(spread[key(r)])),
                    fmt(max(spread[key(r)])),
                ]
                for r in s["pooled"]
            ],
        ),
        "",
        f"Per environment and size (x {REFERENCE}'s time [95% CI]; environments by cost):",
        "",
        table(
            ["env", "size", *variants],
            [
                [
                    env,
                    size,
                    *[
                        next(
                            (
                                with_interval(r["ratio"], r["ci_low"], r["ci_high"])
                                for r in cells
                                if (r["variant"], r["env"], r["size"]) == (v, env, size)
                            ),
                            "",
                        )
                        for v in variants
                    ],
                ]
                for size in s["sizes"]
                for env in sorted(s["envs"], key=x.get)
                if any((r["env"], r["size"]) == (env, size) for r in cells)
            ],
        ),
    ]


def overhead(s) -> list:
    medians, windows = s["medians"], s["windows"]
    rows = [
        [size, v, *[fmt(medians.get((v, size, w), (np.nan,))[0]) for w in windows]]
        for size in s["sizes"]
        for v in s["variants"]
        if (v, size, "setup") in medians
    ]
    return [
        image("overhead.png"),
        "Seconds before iteration 0 (setup: env, model and optimizer built), and mean seconds per iteration in each "
        "window of iterations (0-based: iteration 0 is the first and includes compilation), median over "
        f"environments and seeds; in the figure with the median's {CONFIDENCE:.0%} bootstrap interval:",
        "",
        table(["size", "variant", *windows], rows),
    ]


def rollout_update(s, tool="bench/host_cost.py") -> list:
    rows = [
        [size, v, fmt(r), fmt(u), fmt(r / (r + u), 2)]
        for size in s["sizes"]
        for v in s["variants"]
        for r, u in [s["parts"].get((v, size), (np.nan, np.nan))]
    ]
    lines = [
        image("rollout_update.png"),
        "Seconds per iteration with --sync-timing (median over iterations 1-end, then over environments and seeds):",
        "",
        table(["size", "variant", "rollout + GAE", "update", "rollout share"], rows),
    ]
    if s["handover"]:
        lines += [
            "",
            "### The torch rollout: the hand-over floor and the rest",
            "",
            "The floor: the same rollout code with a policy and a critic that compute nothing, so only the env steps "
            "(one jitted JAX call a step), the DLPack hand-overs between the frameworks and the stacking remain "
            f"({tool}, the median of its timed rollouts, measured by the sweep before its runs). The rest is "
            f"PyTorch's part: the network and GAE. Seconds per iteration (medians over seeds), with {REFERENCE}'s "
            "whole rollout + GAE in the same cell beside them:",
            "",
            table(
                ["env", "size", "variant", "rollout + GAE", "hand-over floor", "floor share", "the rest", REFERENCE],
                [
                    [
                        r["env"],
                        r["size"],
                        r["variant"],
                        fmt(r["rollout_s"]),
                        fmt(r["floor_s"]),
                        fmt(r["floor_share"], 2),
                        fmt(r["rollout_s"] - r["floor_s"]),
                        fmt(r[f"{REFERENCE}_rollout_s"]),
                    ]
                    for r in s["handover"]
                ],
            ),
        ]
    for metric, ratios in s["ratios"].items():
        lines += [
            "",
            f"### Speedup, {metric} (--sync-timing)",
            "",
            f"time(B) / time(A) of the {'rollout + GAE' if metric == 'rollout' else 'update'}, A = {REFERENCE}: "
            f"B's time as a multiple of {REFERENCE}'s, {RATIO_TEXT}",
            "",
            ratio_table(ratios),
        ]
    return lines


STACKS_TEXT = (
    "The stacks experiment: the same PPO on environments with gymnax's dynamics in each framework's own stack. "
    "`+torchenv`: the torch scripts on benchback/torch_ports.py (CartPole-v1 and Acrobot-v1 in PyTorch, on the torch device: the "
    "rollout never leaves PyTorch); `+gymnasium`: on Gymnasium's vector environments on the CPU, observations moved "
    "to the torch device every step; no suffix: on gymnax, stepped through DLPack every step; `jax_linen+pyloop`: "
    "Linen with its rollout stepped from a Python loop, one jitted call a step, as the torch scripts step theirs. "
    "Every run times rollout + GAE and update apart (--sync-timing), the iteration their sum."
)


def stacks(s, tool="bench/host_cost.py") -> list:
    def multiple(metric, v, size, env=None):
        row = next((r for r in s[metric] if (r["variant"], r["size"], r["env"]) == (v, size, env)), None)
        return with_interval(row["ratio"], row["ci_low"], row["ci_high"]) if row else ""

    pooled = [r for r in s["steady"] if r["env"] is None]
    lines = [
        image("stacks.png"),
        STACKS_TEXT,
        "",
        f"Per size, over the environments: each variant's time as a multiple of {REFERENCE}'s, {RATIO_TEXT}",
        "",
        table(
            ["size", "variant", "iteration", "rollout + GAE", "update", "blocks", "verdict (iteration)"],
            [
                [
                    r["size"],
                    r["variant"],
                    multiple("steady", r["variant"], r["size"]),
                    multiple("rollout", r["variant"], r["size"]),
                    multiple("update", r["variant"], r["size"]),
                    r["n_blocks"],
                    r["verdict"],
                ]
                for r in pooled
            ],
        ),
        "",
        f"Per environment and size, the iteration (x {REFERENCE}'s time [95% CI]):",
        "",
    ]
    variants = [v for v in s["variants"] if v != REFERENCE]
    cells = sorted({(r["env"], r["size"]) for r in s["steady"] if r["env"]}, key=lambda c: (s["sizes"].index(c[1]), c[0]))
    lines += [
        table(
            ["env", "size", *variants],
            [[env, size, *(multiple("steady", v, size, env) for v in variants)] for env, size in cells],
        )
    ]
    lines += [
        "",
        "Seconds per iteration (medians over iterations 1-end, environments and seeds):",
        "",
        table(
            ["size", "variant", "rollout + GAE", "update"],
            [
                [size, v, fmt(r), fmt(u)]
                for size in s["sizes"]
                for v in s["variants"]
                for r, u in [s["parts"].get((v, size), (np.nan, np.nan))]
                if np.isfinite(r)
            ],
        ),
    ]
    if s["handover"]:
        lines += [
            "",
            f"The torch scripts' rollout on gymnax, split into the hand-over floor ({tool}: the rollout with a "
            "network that computes nothing) and the rest, seconds per iteration:",
            "",
            table(
                ["env", "size", "variant", "rollout + GAE", "hand-over floor", "floor share"],
                [
                    [r["env"], r["size"], r["variant"], fmt(r["rollout_s"]), fmt(r["floor_s"]), fmt(r["floor_share"], 2)]
                    for r in s["handover"]
                    if "+" not in r["variant"]
                ],
            ),
        ]
    return lines


def compilation(s) -> list:
    run = {r["b"] for r in s["rows"]}
    settings = [f"{v.name} is {described(v)}" for v in DECLARED if v.setting_of and v.name in run]
    note = f" (Settings, each run beside its script in the compile experiment: {'; '.join(settings)}.)" if settings else ""
    return [
        image("compilation.png"),
        "time(B) / time(A): A compiled, B the same with its compilation off or with a setting of its script (above 1: "
        f"B is slower), {RATIO_TEXT}{note}",
        "",
        *[
            line
            for metric in SPEEDUP_METRICS
            for line in (f"**{metric}**", "", ratio_table([r for r in s["rows"] if r["metric"] == metric]), "")
        ],
    ]


def memory(rows) -> list:
    gpu = any(r["gpu_mb_median"] is not None for r in rows)
    return [
        "Peak resident memory of the whole process (MiB: the framework, its compiled programs, the environments and "
        "the rollout), median and highest over the runs" + (", and the GPU allocators' peak" if gpu else "") + ":",
        "",
        table(
            ["size", "variant", "runs", "host MiB, median", "host MiB, highest", *(["GPU MiB, median"] if gpu else [])],
            [
                [
                    r["size"],
                    r["variant"],
                    r["runs"],
                    f"{r['host_mb_median']:.0f}",
                    f"{r['host_mb_max']:.0f}",
                    *([fmt(r["gpu_mb_median"])] if gpu else []),
                ]
                for r in rows
            ],
        ),
    ]


def durations(s) -> list:
    variants, x = s["variants"], s["axis"][0]
    lines = [image("duration.png")]
    for key, what in (("steady", "Steady iteration"), ("first", "Iteration 0"), ("totals", "Total duration")):
        rows = [
            [env, size, *[fmt(s[key].get((v, env, size))) for v in variants]]
            for size in s["sizes"]
            for env in sorted(s["envs"], key=x.get)
        ]
        lines += [f"{what} (s), median over seeds:", "", table(["env", "size", *variants], rows), ""]
    return lines[:-1]


def speedups(s) -> list:
    lines = [
        image("speedup.png"),
        f"Speedup of A over B = time(B) / time(A) (> 1: A is faster), {RATIO_TEXT} Dots: the blocks; "
        "bars: the geometric mean and its interval.",
        "",
    ]
    for metric in SPEEDUP_METRICS:
        lines += [f"### Speedup, {metric}", "", ratio_table(s["rows"][metric]), ""]
    return lines


def scaling(s) -> list:
    sps, num_envs = s["sps"], s["num_envs"]
    rows = [[v, *[f"{sps[(v, n)]:.0f}" if (v, n) in sps else "n/a" for n in num_envs]] for v in s["variants"]]
    return [
        image("scaling.png"),
        "Env steps per second (batch / median iteration time, iterations 1-end), median over seeds:",
        "",
        table(["variant", *[f"{n} envs" for n in num_envs]], rows),
    ]


def seeds(s) -> list:
    lines = [
        image("seeds.png"),
        f"Agent steps per second: N seeds x an iteration's env steps / its median time (iterations 1-end), median over "
        f"blocks with its {CONFIDENCE:.0%} interval. At once / one by one: the time of N seeds trained at once "
        "(--num-seeds N, one vmapped program) over N times one seed's, block by block (geometric mean; below 1, vmap "
        "gives more seeds per hour). Peak host memory: the process's, median.",
        "",
    ]
    for env in s["envs"]:
        rows = []
        for r in (r for r in s["rows"] if r["env"] == env):
            ratio = r["at_once_over_one_by_one"]
            ratio = "-" if ratio is None else with_interval(ratio["ratio"], ratio["ci_low"], ratio["ci_high"])
            k = lambda x: f"{x / 1e3:.1f}k"  # thousands of agent steps per second
            sps = k(r["agent_sps"]) + ("" if r["sps_low"] is None else f" [{k(r['sps_low'])}, {k(r['sps_high'])}]")
            rows.append([r["variant"], r["num_seeds"], r["runs"], sps, ratio, fmt(r["host_mb_median"], 4)])
        header = ["variant", "N", "runs", "agent steps/s", "at once / one by one", "peak host MB"]
        lines += [f"**{env}**", "", table(header, rows), ""]
    return lines


def curves(_) -> list:
    return [
        image("learning_curves.png"),
        f"Episodic return per iteration: IQM over seeds, shaded its {CONFIDENCE:.0%} stratified-bootstrap interval "
        "(rliable); runs of the overall experiment.",
    ]
