"""The run records of a benchmark.sh output directory as one table: a Run per record, and the variants they name.

Every run JSON (schema 1 or 2) under the directory is read, skipping with a warning the files that do not parse,
the failure records and the incomplete ones, and refusing (Unreadable) a directory that cannot be read whole;
env_cost.json (the environments' cost) is read where it is asked for.
"""

import itertools
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.presets import EXPERIMENTS, HOST_WAITS_ON_GPU  # noqa: F401  (HOST_WAITS_ON_GPU: for report.summary)
from bench.presets import SIZES as PLAN_SIZES
from bench.run_records import run_setting, settings_of
from bench.variants import ALGORITHMS, compile_pairs, described, discover, scripts, setting_name  # noqa: F401  (described: report.markdown)

# The variants are the ppo_*.py scripts, in the order and colours they declare (bench/variants.py); a compile
# setting (jax_nnx+nocache: NNX without cached_partial) follows its script.
# Every algorithm's variants, for the names of its records' settings (dqn_torch.py's torch+gymnasium-async, which no
# PPO script has) and their colours; PPO's are the report's own
DECLARED_BY_ALGORITHM = {algorithm: discover(algorithm=algorithm) for algorithm in ALGORITHMS}
DECLARED = DECLARED_BY_ALGORITHM["ppo"]
VARIANTS = [v.name for v in DECLARED]
SPEEDUP_VARIANTS = [v.name for v in scripts(DECLARED)]
# (compiled, not compiled): the pairs of experiment (3)
COMPILE_PAIRS = compile_pairs(DECLARED)
# The learn preset runs each script's default config: its per-iteration times answer "do NNX and Equinox
# cost more than Linen, and than each other?" and "how much faster is the compiled torch iteration?". The
# pairs that differ by one thing: two compiled variants of one framework, and a variant with its compilation
# off. (A, B): time(B) / time(A).
_COMPILED = [v for v in scripts(DECLARED) if v.compiles]
LEARN_PAIRS = [(a.name, b.name) for a, b in itertools.combinations(_COMPILED, 2) if a.framework == b.framework] + [
    pair for pair in COMPILE_PAIRS if pair[1] in SPEEDUP_VARIANTS
]
SIZES = {layers: size for size, layers in PLAN_SIZES.items()}  # hidden layers -> s, m or l (bench/plan.py)
SIZE_ORDER = list(SIZES.values())  # the order of the sizes in tables and figures; other sizes after them


@dataclass
class Run:
    experiment: str
    variant: str  # jax_nnx+nocache: nnx without cached_partial
    env: str
    size: str
    seed: int
    num_envs: int
    record: dict
    num_seeds: int = 1  # seeds trained at once (--num-seeds): the seeds experiment only

    @property
    def total(self) -> float:
        return self.record["total_duration"]

    @property
    def steady(self) -> float:
        """Median iteration time after iteration 0 (compilation); iteration 0 if there is no other."""
        durations = self.record["iteration_durations"]
        return float(np.median(durations[1:] or durations))


def warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


# The keys plot.py reads, for each schema version it accepts; a record without one of them is skipped.
READS = {
    1: [
        "variant",
        "env_id",
        "hidden",
        "seed",
        "args",
        "device",
        "versions",
        "sync_timing",
        "env_steps",
        "setup_duration",
        "iteration_durations",
        "total_duration",
        "compiles_after_first_iteration",
        "episodic_return",
        "final_return",
    ],
}
READS[2] = READS[1] + ["cpu", "peak_host_memory_mb"]


# What a sweep measures beside its runs (bench/env_cost.py; bench/host_cost.py, with its trace, and handover.json from before
# that tool had its name): read where a section asks for them; and plot.py's own summary, which it may have written
# into the same directory.
NOT_RUNS = {"env_cost.json", "host_cost.json", "host_cost.trace.json", "handover.json", "summary.json"}
# The floor's file and the tool that wrote it, the newest first: committed sweeps hold bench/handover.py's (a tool that
# is now bench/host_cost.py: the reports say so).
FLOOR_FILES = {"host_cost.json": "bench/host_cost.py", "handover.json": "bench/handover.py, since become bench/host_cost.py"}


class Unreadable(OSError):
    """Files or folders under a records directory that cannot be read: a report made from the rest would change its
    numbers in silence, so none is made (plot.py and report.front exit 2 naming them)."""


def json_files(directory: Path) -> tuple:
    """(the .json files under `directory`, sorted; the folders that could not be listed)."""
    found, unlisted = [], []
    for folder, folders, names in os.walk(directory, onerror=lambda e: unlisted.append(e.filename)):
        folders[:] = [f for f in folders if not f.startswith(".")]  # .tmp-plot-*: a report being made
        found += [Path(folder) / name for name in names if name.endswith(".json")]
    return sorted(found), sorted(unlisted)


def load_runs(directory: Path):
    """(runs, failures): the ok records under `directory`, and what was wrong with the other files. Raises Unreadable
    naming every file and folder that could not be read."""
    runs, failures = [], []
    paths, unreadable = json_files(directory)
    for path in paths:
        if path.name.startswith(".") or path.name in NOT_RUNS:  # .tmp-*: an atomic write in flight
            continue
        try:
            text = path.read_text()
        except OSError as e:
            unreadable.append(f"{path} ({e.strerror})")
            continue
        try:
            record = json.loads(text)
        except ValueError as e:
            warn(f"{path}: does not parse ({e}); skipped")
            failures.append(f"{path.relative_to(directory)}: does not parse")
            continue
        if not isinstance(record, dict) or record.get("status") != "ok" or record.get("schema_version") not in READS:
            reason = record.get("reason", "not a schema 1 or 2 run record") if isinstance(record, dict) else "not a record"
            warn(f"{path}: failure record or not a run ({reason}); skipped")
            failures.append(f"{path.relative_to(directory)}: {reason}")
            continue
        missing = [key for key in READS[record["schema_version"]] if key not in record]
        if missing or not isinstance(record["args"], dict) or "num_envs" not in record["args"]:
            reason = f"incomplete: no {(missing or ['args.num_envs'])[0]!r}"
        elif not isinstance(record["iteration_durations"], list) or not record["iteration_durations"]:
            reason = "incomplete: no iteration in 'iteration_durations'"  # a run stopped before its first
        else:
            reason = ""
        if reason:
            warn(f"{path}: {reason}; skipped")
            failures.append(f"{path.relative_to(directory)}: {reason}")
            continue
        args = record["args"]
        if args.get("num_seeds", 1) > 1 and args.get("exp_name") != "seeds":  # its times are for every seed at once
            reason = f"trained {args['num_seeds']} seeds at once (--num-seeds), which only the seeds experiment reads"
            warn(f"{path}: {reason}; skipped")
            failures.append(f"{path.relative_to(directory)}: {reason}")
            continue
        if args.get("configs") and args.get("exp_name") != "search":  # its times are for every configuration at once
            reason = "trained a batch of configurations at once (--configs), which only the search experiment reads"
            warn(f"{path}: {reason}; skipped")
            failures.append(f"{path.relative_to(directory)}: {reason}")
            continue
        experiment = args.get("exp_name")
        if experiment not in EXPERIMENTS:  # a run not made by benchmark.sh
            experiment = "sync" if record["sync_timing"] else "overall"
        declared = DECLARED_BY_ALGORITHM.get(record.get("algorithm", "ppo"), DECLARED)
        variant = setting_name(record["variant"], args, declared, settings_of(record))
        hidden = tuple(record["hidden"])
        size = SIZES.get(hidden, "x".join(map(str, hidden)))
        run = Run(
            experiment, variant, record["env_id"], size, record["seed"], args["num_envs"], record, args.get("num_seeds", 1)
        )
        runs.append(run)
        if record["compiles_after_first_iteration"]:  # kept, but its iterations after 0 include compilation
            warn(f"{path}: compiled {record['compiles_after_first_iteration']} time(s) after iteration 0")
    if unreadable:
        raise Unreadable(f"cannot read {', '.join(map(str, unreadable))}: no report from {directory} without them")
    return runs, failures


def warm(record) -> bool:
    """Did the run read persistent compiler caches (benchmark.sh shares them between the runs that time steady
    iterations)? Its iteration 0 may then have loaded its programs rather than compiled them: no compile-time figure
    comes from it. Records from before the caches name none: every run then compiled from cold."""
    return bool((record.get("caches") or {}).get("persistent"))


def compiled_anyway(record) -> bool:
    """A run given warm caches that compiled afresh all the same: they missed (a cell's first run fills them)."""
    return warm(record) and any(found.get("misses") for found in record["caches"].values() if isinstance(found, dict))


def final_return(record):
    """The record's final return: the mean return of the episodes that ended in the last tenth of its iterations, at
    least one (benchback/record.py's final_window). Records made before they held `final_window` averaged the last 10 iterations;
    where that is another window, it is made again from their per-iteration means, weighted equally (exact where those
    iterations ended as many episodes each, as every Pendulum-v1 run's do)."""
    returns, final = record.get("episodic_return") or [], record.get("final_return")
    if "final_window" in record or isinstance(final, list) or not returns:
        return final
    window = max(1, -(-len(returns) // 10))
    if window == min(10, len(returns)):
        return final
    kept = [x for x in returns[-window:] if x is not None]
    return float(np.mean(kept)) if kept else None


def machine(record) -> str:
    """What a run's times were measured on: its GPU, or its CPU model and the cores it could use, with the allocator
    setting or XLA_FLAGS it ran under if any (records before schema 2 do not name the CPU: they count as one machine
    of their own)."""
    setting = run_setting(settings_of(record))
    if record["device"] != "cpu":
        return record["device"] + (f", {setting}" if setting else "")
    cpu = record.get("cpu")
    if not cpu:
        return "cpu, model not recorded"
    return f"{cpu['model']}, {cpu['cores']} cores" + (f", {setting}" if setting else "")


def env_axis(directory: Path, envs):
    """({env: x}, label, log scale?): the env-step cost in microseconds, or the env's rank by name."""
    try:
        costs = json.loads((directory / "env_cost.json").read_text())
        x = {env: costs["envs"][env]["median_s"] * 1e6 for env in envs}
        return x, f"env cost: us per step of {costs['num_envs']} vmapped envs (median)", True
    except (OSError, ValueError, KeyError) as e:
        warn(f"no env cost for every environment ({e!r}); environments ordered by name instead")
        return {env: i for i, env in enumerate(sorted(envs))}, "environment (by name)", False


def floor_file(directory: Path):
    """The name of the floor's file in `directory` (FLOOR_FILES: host_cost.json, else the older handover.json), or
    None without one."""
    return next((name for name in FLOOR_FILES if (Path(directory) / name).exists()), None)


def handover_floors(directory: Path, runs) -> dict:
    """{env: seconds of a torch rollout's floor} from the floor's file (floor_file: bench/host_cost.py's, or
    bench/handover.py's in older sweeps), where it was measured as the sync runs were made (their num_envs, num_steps,
    device and machine); else {} (nothing to split with)."""
    name = floor_file(directory)
    if name is None:
        return {}
    try:
        measured = json.loads((directory / name).read_text())
        shape = {(r.record["args"]["num_envs"], r.record["args"]["num_steps"], r.record["device"]) for r in runs}
        made_on = {machine(r.record) for r in runs}
        where = {"device": measured["device"], "cpu": measured["cpu"], "xla_flags": measured.get("xla_flags")}
        if shape != {(measured["num_envs"], measured["num_steps"], measured["device"])} or made_on != {machine(where)}:
            warn(f"{name} was measured otherwise than the sync runs (envs, steps, device or machine); not used")
            return {}
        return {env: floor["median_s"] for env, floor in measured["envs"].items()}
    except (OSError, ValueError, KeyError, TypeError) as e:
        warn(f"{name} unreadable ({e!r}); not used")
        return {}


def host_cores(directory: Path) -> str:
    """', N CPU cores (machine)' from env_cost.json's host, or '' without it: records of schema 1 do not name the CPU."""
    try:
        host = json.loads((directory / "env_cost.json").read_text())["host"]
        return f", {host['cpu_count']} CPU cores ({host['machine']})"
    except (OSError, ValueError, KeyError):
        return ""


# ---------------------------------------------------------------- grouping
def group_by(runs, key) -> dict:
    """{key(run): the runs with that key, in their order}."""
    groups = defaultdict(list)
    for run in runs:
        groups[key(run)].append(run)
    return groups


def median_by(runs, key, value):
    """{key(run): median of value(run) over the runs sharing that key (the seeds)}."""
    return {k: float(np.median([value(r) for r in group])) for k, group in group_by(runs, key).items()}


def ordered(names, order):
    return sorted(set(names), key=lambda n: (order.index(n) if n in order else len(order), n))


def sizes_of(runs):
    return ordered([r.size for r in runs], SIZE_ORDER)
