"""The summary of one machine's runs: every statistic of its report, section by section, computed once; summary.json
is written from it, and summary.md (report.markdown) and the figures are drawn from it."""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from report import learning, seeds, timing
from report.records import (  # (it puts bench/ on the path)
    HOST_WAITS_ON_GPU,
    compiled_anyway,
    env_axis,
    group_by,
    handover_floors,
    host_cores,
    machine,
    warm,
)


@dataclass
class Summary:
    """A section is None (or empty) where its experiment did not run or gave no result: it is left out of summary.md,
    and its figure is not drawn."""

    device: str
    machine: str
    header: dict  # what summary.md says first: the device, versions, runs, skipped files
    answer: Optional[dict]  # the overall runs: each variant's steady time over the reference's, with its env axis
    overhead: Optional[dict]
    rollout_update: Optional[dict]  # the sync runs
    compilation: Optional[dict]  # the overall and compile runs
    memory: Optional[list]  # every run
    durations: Optional[dict]  # the overall runs, with their env axis
    speedups: Optional[dict]
    scaling: Optional[dict]  # the scaling runs
    seeds: Optional[dict]  # the seeds runs: N seeds at once against one by one
    stacks: Optional[dict]  # the stacks runs: each framework on environments of its own stack
    curves: Optional[dict]  # the overall runs' learning curves
    learn: list  # the learn runs: one section per environment


def summarize(runs, failures, directory: Path) -> Summary:
    """The summary of runs (all from one machine) read from directory, with the files it skipped."""
    by_experiment = group_by(runs, lambda r: r.experiment)
    overall, sync, scaling, learn = (by_experiment[e] for e in ("overall", "sync", "scaling", "learn"))
    one_seed = [r for r in runs if r.num_seeds == 1]  # what the sections but seeds' compare: one seed a run
    compiled = overall + by_experiment["compile"]
    # Where the overall runs loaded their programs from warm caches, what compiling costs comes from the compile
    # experiment's runs, which compiled from cold (benchmark.sh's "Compiler caches").
    cold = [r for r in by_experiment["compile"] if not warm(r.record)] if any(warm(r.record) for r in overall) else None
    return Summary(
        device=runs[0].record["device"],
        machine=machine(runs[0].record),
        header=summary_header(runs, failures, directory),
        answer=answer_section(overall, directory) if overall else None,
        overhead=timing.overhead(overall, cold) if overall else None,
        rollout_update=timing.rollout_update(sync, handover_floors(directory, sync)) if sync else None,
        compilation=timing.compilation(compiled) if compiled else None,
        memory=timing.memory(one_seed),
        durations=durations(overall, directory) if overall else None,
        speedups=timing.speedups(overall, cold) if overall else None,
        scaling=timing.scaling(scaling) if scaling else None,
        seeds=seeds.seeds(by_experiment["seeds"]) if by_experiment["seeds"] else None,
        stacks=timing.stacks(by_experiment["stacks"], handover_floors(directory, by_experiment["stacks"]))
        if by_experiment["stacks"]
        else None,
        curves=learning.learning_curves(overall) if overall else None,
        learn=[learning.learn(env, [r for r in learn if r.env == env]) for env in sorted({r.env for r in learn})],
    )


def summary_header(runs, failures, directory: Path) -> dict:
    device = machine(runs[0].record)
    if device == "cpu, model not recorded":
        device = f"cpu{host_cores(directory)}"
    return {
        "device": device,
        "versions": {k: v for r in runs for k, v in r.record["versions"].items()},
        "runs": len(runs),
        "directory": directory,
        "failures": failures,
        "caches": {
            "warm": sum(warm(r.record) for r in runs),
            "cold": sum(not warm(r.record) for r in runs),
            "compiled_anyway": [(r.experiment, r.variant, r.env, r.size, r.seed) for r in runs if compiled_anyway(r.record)],
        },
        "machines": machines(runs) if runs[0].record["device"] != "cpu" else None,  # a CPU's: one model, any hosts
        "recompiled": [
            (r.record["compiles_after_first_iteration"], r.experiment, r.variant, r.env, r.size, r.seed)
            for r in runs
            if r.record["compiles_after_first_iteration"]
        ],
        # every multiple is of jax_linen's time in the same block: without its runs there is none (said, not left blank)
        **({"no_reference": True} if all(r.variant != timing.REFERENCE for r in runs) else {}),
        **({"smoke_test": smaller} if (smaller := sum(smoke_test(r.record) for r in runs)) else {}),
        **({"one_steady": few} if (few := sum(one_steady(r.record) for r in runs)) else {}),
    }


def smoke_test(record: dict) -> bool:
    """A run of fewer steps a rollout than the answer's iteration (the quick preset's): start-up and compiling dominate
    its time, so its multiples test the sweep and the figures, and answer nothing."""
    return (record.get("args") or {}).get("num_steps", 256) < 256


def one_steady(record: dict) -> bool:
    """A run of at most 2 iterations (--iterations 2): its steady iteration, the median of iterations 1-end, is one
    iteration's time (where it ran no other than iteration 0, iteration 0's, compiling included)."""
    return len(record["iteration_durations"]) <= 2


def machines(runs) -> int:
    """How many machines (hosts) the runs were timed on: a sweep of one GPU model may be resumed on another machine
    with that GPU, never within a block (bench/plan.py)."""
    return len({r.record.get("host") for r in runs})


def answer_section(runs, directory: Path):
    """timing.answer_statistics, with the x-axis of its environments (their cost, or their names) and, on a GPU, the environments
    whose step waits for the host."""
    section = timing.answer_statistics(runs)
    if not section:
        return section
    on_gpu = runs[0].record["device"] != "cpu"
    host_waits = {env: why for env, why in HOST_WAITS_ON_GPU.items() if on_gpu and env in section["envs"]}
    return {**section, "axis": env_axis(directory, section["envs"]), "host_waits": host_waits}


def durations(runs, directory: Path):
    section = timing.durations(runs)
    return {**section, "axis": env_axis(directory, section["envs"])}


def ratios(summary: Summary) -> list:
    """Every ratio of the report but the answer's, in the order of its sections."""
    rollout = summary.rollout_update["ratios"] if summary.rollout_update else {}
    return [
        *(r for rows in rollout.values() for r in rows),
        *(summary.compilation["rows"] if summary.compilation else []),
        *(r for rows in (summary.speedups["rows"] if summary.speedups else {}).values() for r in rows),
        *(r for section in summary.learn for r in section["ratios"]),
    ]


def learning_pairs(section) -> list:
    """One environment's pairs: the probability of improvement, and where the environment has a collapse line, the
    difference in the share of runs below it."""
    collapse, collapses = section["collapse"], section["collapses"]
    return [
        {
            "env": section["env"],
            "a": a,
            "b": b,
            "prob_improvement": pi,
            "ci_low": low,
            "ci_high": high,
            **(
                {
                    f"share_below_{collapse}_difference": collapses[a, b][0],
                    f"share_below_{collapse}_difference_ci": collapses[a, b][1:],
                }
                if collapse
                else {}
            ),
        }
        for (a, b), (pi, low, high) in section["pairs"].items()
    ]


def without_blocks(rows) -> list:
    return [{k: v for k, v in r.items() if k != "blocks"} for r in rows]


def as_json(summary: Optional[Summary], search: Optional[dict] = None, device: str = "") -> str:
    """summary.json: every ratio (without its blocks) and every learning statistic; a search's trials (report.search)
    where there are any, alone where nothing else is (device: then the machine)."""
    if summary is None:
        head = {"device": device, "machine": device, "confidence": timing.CONFIDENCE, "min_blocks": timing.MIN_BLOCKS}
        return json.dumps({**head, "search": search}, indent=1, default=float) + "\n"
    return json.dumps(
        {
            "device": summary.device,
            "machine": summary.machine,
            "confidence": timing.CONFIDENCE,
            "min_blocks": timing.MIN_BLOCKS,
            "ratios": without_blocks(ratios(summary)),
            "answer": without_blocks(summary.answer["rows"] if summary.answer else []),
            "memory": summary.memory or [],
            "seeds": summary.seeds["rows"] if summary.seeds else [],
            "handover": summary.rollout_update["handover"] if summary.rollout_update else [],
            "stacks": {m: without_blocks(summary.stacks[m]) for m in ("steady", "rollout", "update")}
            if summary.stacks
            else {},
            "learning": [{"env": s["env"], **r} for s in summary.learn for r in s["rows"]],
            "learning_pairs": [r for s in summary.learn for r in learning_pairs(s)],
            "time_to_threshold": [{"env": s["env"], **r} for s in summary.learn for r in s["reach"]],
            **({"search": search} if search else {}),
        },
        indent=1,
    )
