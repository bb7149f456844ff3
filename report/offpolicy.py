"""The off-policy answer (SAC's, TD3's, DQN's), from the records of their presets (sac and sac-learn, ...): each
variant's steady iteration over jax_linen's in every cell (environment, size, number of envs, update-to-data
ratio), computed as PPO's answer is (report.timing: a ratio per block of runs made back to back, the geometric mean over the blocks, its bootstrap interval); and on the
algorithm's learn environment (Pendulum-v1; DQN's CartPole-v1) the learning (report.learning: rliable's IQM and
probability of improvement over jax_linen, the seconds to the environment's highest bar, -200 or 475), the compilation
seconds and the peak memory of the learn runs, which compile from cold.

    python plot.py benchmark_out/sac          # summary.md and summary.json of one SAC sweep (plot.py calls this)
    python -m report.front --readme README.md # ... and README's off-policy table, from its sets in results/
"""

import numpy as np

from report import learning
from report.records import VARIANTS, final_return, group_by, ordered, warm
from report.tables import improvement as improvement_text
from report.tables import table
from report.timing import REFERENCE, compare, geometric_ratio, median_with_interval

ALGORITHMS = {"sac": "SAC", "td3": "TD3", "dqn": "DQN"}  # the off-policy records' `algorithm`, and its name in a report
# Each algorithm's learn environments, a learning table each (the first is its answer's); the seconds to each one's
# highest bar (report.learning.THRESHOLDS: Pendulum-v1's -200, CartPole-v1's 475, FourRooms-misc's 1.0)
LEARN_ENVS = {"sac": ("Pendulum-v1",), "td3": ("Pendulum-v1",), "dqn": ("CartPole-v1", "FourRooms-misc")}


def learn_envs(runs) -> tuple:
    """The learn environments of the runs' algorithm (the first one's, where they hold several)."""
    return next(
        (LEARN_ENVS[r.record["algorithm"]] for r in runs if r.record.get("algorithm") in LEARN_ENVS), LEARN_ENVS["sac"]
    )


def target(env: str) -> float:
    """The return whose seconds the learning table gives: the environment's highest bar."""
    return learning.THRESHOLDS[env][-1]


def is_offpolicy(run) -> bool:
    return run.record.get("algorithm") in ALGORITHMS


def algorithm_name(runs) -> str:
    """The name of the off-policy algorithm (or algorithms) of runs, for titles: SAC, TD3, or SAC and TD3."""
    return " and ".join(ALGORITHMS[a] for a in ALGORITHMS if any(r.record.get("algorithm") == a for r in runs))


def cell_of(run) -> tuple:
    """(env, size, num_envs, update-to-data ratio, full_buffer): what a ratio's blocks share beside their seed. DQN's
    ratio is one gradient step every train_frequency steps: 1 / train_frequency."""
    args = run.record["args"]
    utd = int(args["updates_per_step"]) if "updates_per_step" in args else 1 / int(args["train_frequency"])
    return run.env, run.size, run.num_envs, utd, bool(args.get("full_buffer", False))


def cell_name(cell: tuple, hidden) -> str:
    env, size, num_envs, utd, full = cell
    what = "steps alone (UTD 0)" if utd == 0 else f"UTD {utd:g}"
    return (
        f"{env}, {size} ({'x'.join(map(str, hidden))}), {num_envs} env{'s' * (num_envs > 1)}, {what}" + ", full buffer" * full
    )


# What a record's args may differ in and still join its cell's blocks: the run's own name, seed and outputs, and what
# makes a variant of a script (its environment stack, CUDA graphs: bench/variants.py names them apart).
PER_RUN = frozenset({"seed", "exp_name", "json_out", "quiet", "tensorboard", "env_backend", "cuda_graphs"})


class MixedSettings(ValueError):
    """Records of one cell (or one learn environment) made with other settings: they would join its blocks unseen."""


def check_settings(runs) -> None:
    """Raises MixedSettings unless every cell's records (every learn environment's) share their settings: the whole
    args, as a resumed sweep compares them, but for PER_RUN and what one script has and another lacks (torch's
    --env-backend). One line naming the cell, the setting and its values."""
    overall = group_by([r for r in runs if r.experiment == "overall"], cell_of)
    learn = group_by([r for r in runs if r.experiment == "learn"], lambda r: r.env)
    for where, pool in [*overall.items(), *learn.items()]:
        shared = set.intersection(*(set(r.record["args"]) for r in pool)) - PER_RUN
        for name in sorted(shared):
            values = {repr(r.record["args"][name]) for r in pool}
            if len(values) > 1:
                shown = where if isinstance(where, str) else cell_name(where, pool[0].record["hidden"])
                raise MixedSettings(
                    f"{shown}: its records differ in {name} ({', '.join(sorted(values))}); one setting a cell:"
                    " move the others to a folder of their own"
                )


def timing(runs) -> list:
    """Per cell and variant: its steady iteration over jax_linen's (a compare() row; none in a cell without
    jax_linen's runs), the median steady seconds and the env and gradient steps a second they make."""
    check_settings(runs)
    rows, first = [], learn_envs(runs)[0]
    cells = group_by([r for r in runs if r.experiment == "overall"], cell_of)
    for cell in sorted(cells, key=lambda c: (c[0] != first, c[0], c[1] != "c", c[2], c[3] == 0, c[3], c[4])):
        pool = cells[cell]
        for variant in ordered({r.variant for r in pool}, VARIANTS):
            own = [r for r in pool if r.variant == variant]
            steady, low, high = median_with_interval([r.steady for r in own])
            args = own[0].record["args"]
            row = compare(pool, REFERENCE, variant, "steady", cell[1], cell[0]) if variant != REFERENCE else None
            env_steps = args["steps_per_iteration"] * args["num_envs"]  # an iteration's, of every env
            rows.append(
                {
                    "cell": cell_name(cell, own[0].record["hidden"]),
                    "env": cell[0],
                    "size": cell[1],
                    "num_envs": cell[2],
                    "updates_per_step": cell[3],
                    "variant": variant,
                    "runs": len(own),
                    "steady_seconds": steady,
                    "steady_ci": [low, high] if np.isfinite(low) else None,  # the median's, over the runs
                    "full_buffer": cell[4],
                    "env_steps_per_second": env_steps / steady,
                    "grad_steps_per_second": args["steps_per_iteration"] * cell[3] / steady,
                    **({k: row[k] for k in ("ratio", "ci_low", "ci_high", "n_blocks", "verdict")} if row else {}),
                }
            )
    return rows


def same_blocks(a, b, variant: str, value=lambda r: r.steady) -> tuple:
    """A variant's values in two cells, each by seed (its block), and the seeds both cells ran."""
    x = {r.seed: value(r) for r in a if r.variant == variant}
    y = {r.seed: value(r) for r in b if r.variant == variant}
    return x, y, sorted(x.keys() & y.keys())


def split(runs) -> list:
    """Where an iteration's time goes, per variant: its steady iteration with the steps alone (act, step, store:
    UTD 0) over the same cell's at UTD 1, block by block (the same seed), the median share and its bootstrap
    interval; and from the medians, microseconds a step of the envs and a gradient step."""
    rows = []
    cells = group_by([r for r in runs if r.experiment == "overall"], cell_of)
    for (env, size, num_envs, utd, full), alone in cells.items():
        whole = cells.get((env, size, num_envs, 1, full))
        if utd != 0 or not whole:
            continue
        for variant in ordered({r.variant for r in alone} & {r.variant for r in whole}, VARIANTS):
            steps, both, seeds = same_blocks(alone, whole, variant)
            if not seeds:
                continue
            share, low, high = median_with_interval([steps[k] / both[k] for k in seeds])
            per = {r.record["args"]["steps_per_iteration"] for r in [*alone, *whole] if r.variant == variant}
            if len(per) != 1:  # iterations of other sizes: their times do not subtract
                continue
            per = per.pop()
            step_s, whole_s = float(np.median([steps[k] for k in seeds])), float(np.median([both[k] for k in seeds]))
            rows.append(
                {
                    "cell": cell_name((env, size, num_envs, 1, full), whole[0].record["hidden"]),
                    "variant": variant,
                    "blocks": len(seeds),
                    "steps_share": share,
                    "steps_share_ci_low": low,
                    "steps_share_ci_high": high,
                    "step_us": 1e6 * step_s / per,
                    "gradient_step_us": 1e6 * (whole_s - step_s) / per,
                }
            )
    return rows


def env_scaling(runs) -> list:
    """Per variant, in cells alike but for their number of envs: its environment steps a second at each count over
    at the fewest, block by block (the same seed), the geometric mean over the blocks and its bootstrap interval. The
    post's "16 times the envs, 10 times the training speed", measured."""
    rows = []
    cells = group_by([r for r in runs if r.experiment == "overall"], cell_of)
    groups = group_by(list(cells), lambda c: (c[0], c[1], c[3], c[4]))
    rate = lambda r: r.record["args"]["steps_per_iteration"] * r.num_envs / r.steady
    for (env, size, utd, full), alike in groups.items():
        counts = sorted(c[2] for c in alike)
        if len(counts) < 2:
            continue
        fewest = cells[(env, size, counts[0], utd, full)]
        for variant in ordered({r.variant for r in fewest}, VARIANTS):
            for n in counts[1:]:
                base, more, seeds = same_blocks(fewest, cells[(env, size, n, utd, full)], variant, rate)
                if not seeds:
                    continue
                gain, low, high = geometric_ratio([more[k] / base[k] for k in seeds])
                rows.append(
                    {
                        "cell": cell_name((env, size, counts[0], utd, full), fewest[0].record["hidden"]),
                        "variant": variant,
                        "num_envs": n,
                        "fewest_envs": counts[0],
                        "blocks": len(seeds),
                        "env_steps_gain": gain,
                        "env_steps_gain_ci_low": low,
                        "env_steps_gain_ci_high": high,
                    }
                )
    return rows


def fullness(runs) -> list:
    """Per variant, what a full buffer costs: its steady iteration sampling from all the buffer's rows (--full-buffer)
    over the same cell's sampling from the rows the run has filled, block by block (the same seed), the geometric mean
    over the blocks and its bootstrap interval."""
    rows = []
    cells = group_by([r for r in runs if r.experiment == "overall"], cell_of)
    for (env, size, num_envs, utd, full), filled in cells.items():
        partly = cells.get((env, size, num_envs, utd, False))
        if not full or not partly:
            continue
        for variant in ordered({r.variant for r in filled} & {r.variant for r in partly}, VARIANTS):
            base, more, seeds = same_blocks(partly, filled, variant)
            if not seeds:
                continue
            cost, low, high = geometric_ratio([more[k] / base[k] for k in seeds])
            rows.append(
                {
                    "cell": cell_name((env, size, num_envs, utd, False), filled[0].record["hidden"]),
                    "variant": variant,
                    "blocks": len(seeds),
                    "full_over_filled": cost,
                    "full_over_filled_ci_low": low,
                    "full_over_filled_ci_high": high,
                }
            )
    return rows


def learned(runs) -> list:
    """Per learn environment of the algorithm (LEARN_ENVS) with learn runs, report.learning's section, with per
    variant the median compilation seconds (iteration 0 less the steady iteration, of runs that compiled from cold) and
    the median peak resident memory."""
    sections = []
    for env in learn_envs(runs):
        group_env = [r for r in runs if r.experiment == "learn" and r.env == env]
        if not group_env:
            continue
        section = learning.learn(env, group_env)
        extra = {}
        for variant, group in group_by(group_env, lambda r: r.variant).items():
            cold = [r.record["iteration_durations"][0] - r.steady for r in group if not warm(r.record)]
            memory = [r.record["peak_host_memory_mb"] for r in group if r.record.get("peak_host_memory_mb") is not None]
            extra[variant] = {
                "compile_seconds": median_with_interval(cold)[0] if cold else None,
                "peak_host_mb": float(np.median(memory)) if memory else None,
            }
        kept = ("env", "seeds", "variants", "finals", "rows", "reach", "first", "steady")  # what summary.json holds
        sections.append({**{k: section[k] for k in kept}, "per_variant": extra})
    return sections


def environments(runs) -> list:
    """Per learn environment and variant, whether SAC learns it: the IQM final return over the runs, and the IQM of
    each run's final return less its random steps' (the mean return of the episodes that ended among them: random
    actions'), each with its stratified-bootstrap interval. It is above random actions where the second interval lies
    above 0."""
    rows, first = [], learn_envs(runs)[0]
    learn = group_by([r for r in runs if r.experiment == "learn"], lambda r: (r.env, r.variant))
    iqm = lambda s: np.array([learning.iqm_over_runs(s[:, 0])])
    for env, variant in sorted(learn, key=lambda k: (k[0] != first, k[0], VARIANTS.index(k[1]))):
        group = [r for r in learn[env, variant] if final_return(r.record) is not None]
        if not group:
            continue
        paired = [r for r in group if r.record.get("random_return") is not None]
        if not paired:  # records made before they held the random steps' return
            continue
        scores = {"final": np.array([[final_return(r.record)] for r in group])}
        scores["gain"] = np.array([[final_return(r.record) - r.record["random_return"]] for r in paired])
        point, ci = learning.interval_estimates(scores, iqm)
        bar = learning.THRESHOLDS.get(env, (None,))[-1]  # the environment's bar for solved, where it has one
        episodes = sum(r.record["random_episodes"] for r in paired)
        row = {
            "env": env,
            "variant": variant,
            "runs": len(group),
            "random_episodes": episodes,
            "random_return": sum(r.record["random_return"] * r.record["random_episodes"] for r in paired) / episodes
            if episodes
            else None,
            "threshold": bar,
            "runs_reaching": None
            if bar is None
            else sum(learning.time_to_threshold(r.record, bar)[0] is not None for r in group),
        }
        for key in scores:
            low, high = (float(x) for x in np.ravel(ci[key]))
            row |= {key: float(point[key][0]), f"{key}_ci_low": low, f"{key}_ci_high": high}
        row["learns"] = row["gain_ci_low"] > 0 if len(group) >= 2 else None  # one run's interval is the run itself
        rows.append(row)
    return rows


def learn_configs(runs) -> dict:
    """{env: what its learn runs did, for a figure's title} for each environment with learn runs."""
    configs = {}
    for r in sorted((r for r in runs if r.experiment == "learn"), key=lambda r: r.env):
        args = r.record["args"]
        configs.setdefault(
            r.env, f"{algorithm_name([r])} at {'x'.join(map(str, r.record['hidden']))}, {args['total_timesteps']:,} steps"
        )
    return configs


def summary(runs, learning: bool = True) -> dict:
    """Every table's numbers; without `learning` the timing alone (its bootstraps are most of the work)."""
    runs = [r for r in runs if is_offpolicy(r)]
    found = learned(runs) if learning else None
    made = {"timing": timing(runs), "split": split(runs), "env_scaling": env_scaling(runs), "fullness": fullness(runs)}
    made["learning"] = found
    made["environments"] = environments(runs)
    return made | {"algorithm": algorithm_name(runs)}


def ratio_text(row: dict) -> str:
    if row["variant"] == REFERENCE:
        return "1 (reference)"
    if row.get("ratio") is None:
        return f"no {REFERENCE} runs to divide by"
    if row.get("ci_low") is None:
        return f"{row['ratio']:.2f} ({row['verdict']})"
    verdict = f", {row['verdict']}" if row["verdict"] in ("no difference detected", "too few runs") else ""
    return f"{row['ratio']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}]{verdict}"


def timing_markdown(rows: list, rates_table: bool = True) -> list:
    """One table: a row per variant, a column per cell; then (rates_table) every variant's steps a second."""
    cells = list(dict.fromkeys(r["cell"] for r in rows))
    variants = ordered({r["variant"] for r in rows}, VARIANTS)
    by = {(r["cell"], r["variant"]): r for r in rows}
    body = [[v, *(ratio_text(by[c, v]) if (c, v) in by else "not run" for c in cells)] for v in variants]
    blocks = {c: max(r.get("n_blocks", r["runs"]) for r in rows if r["cell"] == c) for c in cells}
    head = ["variant", *(f"{c} ({blocks[c]} blocks; {rates(by.get((c, REFERENCE)))})" for c in cells)]
    rows_of = lambda v: [rates(by.get((c, v))) for c in cells]
    steps = [[v, *rows_of(v)] for v in variants]
    note = f"Each cell's header: {REFERENCE}'s environment steps and gradient steps a second."
    if not rates_table:
        return [table(head, body), "", note]
    return [table(head, body), "", note + " Every variant's:", "", table(["variant", *cells], steps)]


def front_markdown(summaries: dict) -> str:
    """README's one off-policy table from {algorithm: summary}: a row per algorithm and cell, jax_linen's environment
    and gradient steps a second, then a column per variant: its steady iteration over jax_linen's (ratio_text)."""
    rows = [(ALGORITHMS[a], r) for a, s in summaries.items() for r in s["timing"]]
    variants = [v for v in ordered({r["variant"] for _, r in rows}, VARIANTS) if v != REFERENCE]
    cells = list(dict.fromkeys((name, r["cell"]) for name, r in rows))
    by = {(name, r["cell"], r["variant"]): r for name, r in rows}
    blocks = lambda c: max(r.get("n_blocks", r["runs"]) for name, r in rows if (name, r["cell"]) == c)
    short = lambda r: f"{r['env_steps_per_second']:,.0f}, {r['grad_steps_per_second']:,.0f}" if r else "not run"
    head = ["algorithm", "cell", "blocks", f"{REFERENCE}: env steps/s, gradient steps/s", *variants]
    body = [
        [*c, blocks(c), short(by.get((*c, REFERENCE))), *(ratio_text(by[(*c, v)]) if (*c, v) in by else "-" for v in variants)]
        for c in cells
    ]
    notes = (
        "Each variant's column: its steady iteration (the median of iterations 1-end) over jax_linen's in the same block"
        " of runs, the geometric mean over the blocks and its 95% bootstrap interval; -: not run. UTD: gradient steps"
        " per step of the envs."
    )
    return "\n".join([table(head, body), "", notes, ""])


def rates(row) -> str:
    """A row's environment steps and gradient steps a second, from its median steady iteration."""
    if row is None:
        return "not run"
    return f"{row['env_steps_per_second']:,.0f} env steps/s, {row['grad_steps_per_second']:,.0f} gradient steps/s"


def split_markdown(rows: list) -> list:
    head = ["cell", "variant", "blocks", "steps' share of the iteration [95% CI]", "us a step", "us a gradient step"]
    ci = lambda r: f" [{r['steps_share_ci_low']:.2f}, {r['steps_share_ci_high']:.2f}]" if r["blocks"] >= 3 else ""
    body = [
        [
            r["cell"],
            r["variant"],
            r["blocks"],
            f"{r['steps_share']:.2f}{ci(r)}",
            f"{r['step_us']:.0f}",
            f"{r['gradient_step_us']:.0f}",
        ]
        for r in rows
    ]
    return [table(head, body)]


def env_scaling_markdown(rows: list) -> list:
    head = ["cell (at the fewest envs)", "variant", "envs", "blocks", "env steps a second over at the fewest [95% CI]"]
    low, high = "env_steps_gain_ci_low", "env_steps_gain_ci_high"
    ci = lambda r: f" [{r[low]:.2f}, {r[high]:.2f}]" if r[low] is not None else ""
    body = [
        [
            r["cell"],
            r["variant"],
            f"{r['num_envs']} ({r['num_envs'] // r['fewest_envs']}x)",
            r["blocks"],
            f"{r['env_steps_gain']:.2f}{ci(r)}",
        ]
        for r in rows
    ]
    return [table(head, body)]


def fullness_markdown(rows: list) -> list:
    head = ["cell", "variant", "blocks", "full buffer over the filled rows [95% CI]"]
    low, high = "full_over_filled_ci_low", "full_over_filled_ci_high"
    ci = lambda r: f" [{r[low]:.2f}, {r[high]:.2f}]" if r[low] is not None else ""
    return [table(head, [[r["cell"], r["variant"], r["blocks"], f"{r['full_over_filled']:.2f}{ci(r)}"] for r in rows])]


def learning_markdown(section: dict) -> list:
    if not section:
        return []
    bar = target(section["env"])
    reach = {r["variant"]: r for r in section["reach"] if r["threshold"] == bar}
    head = [
        "variant",
        "seeds",
        "IQM final return [95% CI]",
        "P(improvement) over jax_linen [95% CI]",
        f"runs reaching {bar:g}",
        f"seconds to {bar:g} (IQM)",
        "compile s",
        "peak memory MB",
    ]
    body = []
    for row in section["rows"]:
        v, per = row["variant"], section["per_variant"][row["variant"]]
        p = row.get(f"prob_improvement_vs_{REFERENCE}")
        improvement = (
            "reference"
            if v == REFERENCE
            else (
                improvement_text(
                    p, *(row[f"prob_improvement_vs_{REFERENCE}_ci_{end}"] for end in ("low", "high")), "{:.2f}".format
                )
                if p is not None
                else row["verdict"]
            )
        )
        r = reach.get(v, {})
        body.append(
            [
                v,
                row["n_seeds"],
                f"{row['iqm']:.1f} [{row['iqm_ci_low']:.1f}, {row['iqm_ci_high']:.1f}]",
                improvement,
                f"{r.get('reached', 0)}/{r.get('runs', 0)}",
                f"{r['seconds']:.1f} [{r['seconds_ci'][0]:.1f}, {r['seconds_ci'][1]:.1f}]"
                if r.get("seconds") is not None
                else "-",
                f"{max(per['compile_seconds'], 0):.1f}" if per["compile_seconds"] is not None else "-",
                f"{per['peak_host_mb']:.0f}" if per["peak_host_mb"] is not None else "-",
            ]
        )
    return [table(head, body)]


def environments_markdown(rows: list) -> list:
    head = ["environment", "variant", "runs", "IQM final return [95% CI]", "random actions' return (episodes)"]
    head += ["final less random, IQM [95% CI]", "above random actions", "runs reaching the bar"]
    interval = lambda r, key: f"{r[key]:.1f} [{r[f'{key}_ci_low']:.1f}, {r[f'{key}_ci_high']:.1f}]"
    body = [
        [
            r["env"],
            r["variant"],
            r["runs"],
            interval(r, "final"),
            f"{r['random_return']:.1f} ({r['random_episodes']})",
            interval(r, "gain"),
            "too few runs" if r["learns"] is None else "yes" if r["learns"] else "no",
            "-" if r["threshold"] is None else f"{r['runs_reaching']}/{r['runs']} (bar {r['threshold']:g})",
        ]
        for r in rows
    ]
    return [table(head, body)]


def markdown(s: dict, learning: bool = True) -> str:
    """summary.md's tables; without `learning`, the timing table alone (README's copy)."""
    lines = []
    if s["timing"]:
        lines += timing_markdown(s["timing"], rates_table=learning)
        lines += [
            "",
            "Each cell: the variant's steady iteration (the median of iterations 1-end) over jax_linen's in the"
            " same block of runs, the geometric mean over the blocks and its 95% bootstrap interval; UTD: gradient"
            " steps per step of the envs.",
            "",
        ]
    if s.get("split") and learning:
        lines += split_markdown(s["split"])
        lines += [
            "",
            "Where the time goes: the steady iteration with the steps alone (act, step the envs, store: UTD 0) over"
            " the same cell's at UTD 1, per block, the median and its bootstrap interval; a step's and a gradient"
            " step's microseconds from the two median iterations (the gradient step's: the difference).",
            "",
        ]
    if s.get("env_scaling") and learning:
        lines += env_scaling_markdown(s["env_scaling"])
        lines += [
            "",
            "More envs: a variant's environment steps a second (of its steady iteration) at a count over at the fewest,"
            " in the same block, the geometric mean over the blocks and its 95% bootstrap interval. A step of the"
            " loop steps every env at once and takes its gradient steps per step of the loop (UTD, or DQN's one every"
            " 10), not per env: more envs, fewer gradient steps per env step.",
            "",
        ]
    if s.get("fullness") and learning:
        lines += fullness_markdown(s["fullness"])
        lines += [
            "",
            "A full buffer: a variant's steady iteration sampling from every row of its 1e6 (--full-buffer, as late in"
            " a long run) over the same cell's sampling from the rows its run has filled, in the same block, the"
            " geometric mean over the blocks and its 95% bootstrap interval.",
            "",
        ]
    for section in (s["learning"] or []) if learning else []:
        if not section["rows"]:  # too few seeds to compare
            continue
        lines += learning_markdown(section)
        lines += [
            "",
            f"Learning: {section['env']}, final return (the mean return of the episodes that ended in the last tenth of"
            " the iterations, at least one: docs/record.md), rliable's IQM and probability of improvement with"
            f" stratified-bootstrap intervals; seconds to a return of {target(section['env']):g}: from the start of"
            " train(), setup, random steps and compilation included, over the runs that reach it; compile s: iteration"
            " 0 less the steady iteration (cold caches); memory: the process's peak resident set.",
            "",
        ]
    if s.get("environments") and learning:
        lines += environments_markdown(s["environments"])
        lines += [
            "",
            f"Does {s.get('algorithm', 'SAC')} learn the environment? Final return as above, rliable's IQM over the runs and its"
            " stratified-bootstrap interval; random actions' return: the mean return of the episodes that ended in"
            " the runs' random steps before learning (uniformly random actions); final less random: each run's"
            " final return less its random steps' return; above random actions: that interval lies above 0; the bar: the highest of report.learning's thresholds for the environment"
            " (MountainCarContinuous-v0's is Gymnasium's reward_threshold), reached by an iteration's mean return.",
            "",
        ]
    return "\n".join(lines)
