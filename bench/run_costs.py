"""What a sweep will cost, from what earlier runs cost: the estimate benchmark.sh prints before it starts.

    python bench/run_costs.py build results/speed/cpu/records --log results/speed/cpu/records/sweep.log   # the table, from records
    printf 'torch CartPole-v1 s 21\\n' | python bench/run_costs.py estimate             # seconds for these runs

One table per CPU model (bench/costs/<model>.json), and one per GPU model from runs on that GPU, since two models of one family run the same runs at different
speeds: an estimate comes from this machine's own table where there is one. A table holds, per variant, environment
and size, the median seconds of a run's setup, of its iteration 0 (compilation included) and of one later iteration,
over the records of one CPU model, plus each framework's start-up and exit (what a run's wall-clock seconds, in the
sweep's log, hold beyond the record's total_duration: the interpreter, the imports, the record written). A run of N
iterations is estimated as start-up + setup + iteration 0 + (N - 1) later iterations. A cell this machine's table
lacks is taken from the other table that measured most of the same cells, scaled to this machine by the median ratio
of the cells both measured; a cell neither measured is the variant's median over the environments measured at that
size, plus what the cell's environment added to the variant's run at another size, else to the other variants' runs
(the same seconds whatever the network). A machine with no table of its own gets the fullest table's costs, and the
estimate says which machine they come from.
For a GPU, the estimate comes from the GPU tables (the committed GPU runs), else from the CPU costs, labelled so (Prices).
An off-policy run (SAC's, TD3's, DQN's scripts, whose variants share PPO's names) is priced whole: its framework's
start-up and the median duration of the earlier runs of its name but the seed (its algorithm, experiment, variant,
environment, size and cell), from this machine's table, else from the table with most such runs, unscaled; a run no
table has is named as not counted.
"""

import argparse
import json
import os
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

if __name__ == "__main__" and not __package__:  # run as `python bench/run_costs.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.outputs import write_atomic
from bench.presets import SIZES
from bench.run_records import cpu_model, gpu_names, settings_of
from bench.variants import discover, setting_name

COSTS = Path(__file__).with_name("costs")  # the tables, one a CPU model
KEYS = ("setup_s", "first_s", "later_s")  # a cell's seconds: setup, iteration 0, a later iteration
SIZE_OF = {layers: size for size, layers in SIZES.items()}  # hidden layers -> s, m or l


DECLARED = discover()  # the scripts and their settings (jax_nnx+nocache, torch_compile+graphs)
FRAMEWORK = {v.name: v.framework for v in DECLARED}  # None: no such script now


def startup_from_log(log: Path, directories) -> dict:
    """{framework: median seconds of a run's wall clock beyond its record's total_duration}, from the lines
    benchmark.sh prints ("[i/N] ... overall/torch__CartPole-v1__s__seed1 ... ok in 34s")."""
    beyond = defaultdict(list)
    for name, seconds in re.findall(r"(\S+) \.\.\. ok in (\d+)s", log.read_text()):
        for directory in directories:
            path = Path(directory) / f"{name}.json"
            if path.exists():
                record = json.loads(path.read_text())
                beyond[FRAMEWORK.get(record["variant"])].append(int(seconds) - record["total_duration"])
    return {f: round(statistics.median(values), 1) for f, values in beyond.items() if f}


def table_path(cpu: str) -> Path:
    """Where a CPU model's table is kept: bench/costs/amd-epyc-family-25-model-1.json for "AMD EPYC (family 25, model 1)"."""
    return COSTS / (re.sub(r"[^a-z0-9]+", "-", cpu.lower()).strip("-") + ".json")


def run_key(algorithm: str, name: str) -> str:
    """An off-policy run's key in a table: its algorithm and its name without the seed (td3 learn/torch__Swimmer-misc__s),
    the same cell, variant and settings whatever the seed. Its runs' seconds price it whole: their iterations differ
    from cell to cell (steps, envs, updates), which the run's name fixes."""
    name = re.sub(r"__seed[0-9]+$", "", name).removesuffix(f"__{algorithm}")  # (the gpu preset tells TD3's from SAC's)
    return f"{algorithm} {name}"


def build(directories, out=None, startup=None) -> dict:
    """The table from every ok record under `directories` (one CPU model only, or exit 2), written to `out` (by default
    the model's own file), with `startup` over the start-up seconds the file held before."""
    cells, models, whole = defaultdict(list), set(), defaultdict(list)
    for directory in directories:
        for path in Path(directory).rglob("*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if not isinstance(record, dict) or record.get("status") != "ok" or "iteration_durations" not in record:
                continue
            if record.get("algorithm", "ppo") != "ppo":  # an off-policy run: priced whole, by its name but the seed
                on_gpu = record.get("device", "cpu") != "cpu"
                models.add((record["device"], True) if on_gpu else ((record.get("cpu") or {}).get("model"), False))
                name = path.relative_to(directory).with_suffix("").as_posix()
                whole[run_key(record["algorithm"], name)].append(record["total_duration"])
                continue
            size = SIZE_OF.get(tuple(record["hidden"]))
            if size is None or record["args"].get("num_envs") != 32 or record["args"].get("num_seeds", 1) != 1:
                continue  # the study's iteration, of one seed, only
            on_gpu = record.get("device", "cpu") != "cpu"  # a GPU's runs: a table of that GPU model's
            models.add((record["device"], True) if on_gpu else ((record.get("cpu") or {}).get("model"), False))
            durations = record["iteration_durations"]
            variant = setting_name(record["variant"], record["args"], DECLARED, settings_of(record))
            later = durations[1:] or durations
            cells[variant, record["env_id"], size].append((record["setup_duration"], durations[0], statistics.median(later)))
    if len(models) != 1:
        names = sorted(str(name) for name, _ in models)
        print(f"error: the records name {len(models)} machine models ({names}); give one model's", file=sys.stderr)
        raise SystemExit(2)
    rows = [
        {
            "variant": v,
            "env": e,
            "size": s,
            "runs": len(runs),
            **{key: statistics.median(r[i] for r in runs) for i, key in enumerate(KEYS)},
        }
        for (v, e, s), runs in sorted(cells.items())
    ]
    model, gpu = models.pop()
    out = Path(out or table_path(model))
    before = json.loads(out.read_text())["startup_s"] if out.exists() else {}
    table = {"cpu": model, "startup_s": {**before, **(startup or {})}, "sources": [str(d) for d in directories], "cells": rows}
    table["runs"] = {
        key: {"runs": len(seconds), "total_s": statistics.median(seconds)} for key, seconds in sorted(whole.items())
    }
    if gpu:  # "cpu" then names the GPU model, whose runs these are
        table["gpu"] = True
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(table, indent=1) + "\n")
    return table


def scale_tiers(variant: str, size: str):
    """Which shared cells scale a cell of `variant` at `size`, first choice first."""
    return (
        lambda v, z: v == variant and z == size,
        lambda v, z: v == variant,
        lambda v, z: z == size,
        lambda v, z: True,
    )


class Estimator:
    def __init__(self, table: dict, reference=None):
        """`table`: the machine's costs. `reference`: another machine's table, for the cells `table` lacks."""
        own = {(c["variant"], c["env"], c["size"]): c for c in table["cells"]}
        self.reference = Estimator(reference) if reference else None
        self.startup = {**(reference or {}).get("startup_s", {}), **table["startup_s"]}
        theirs = self.reference.cells if self.reference else {}
        shared = [(c, theirs[k]) for k, c in own.items() if k in theirs]
        # this machine's seconds over the reference's, for each part of a run, variant and size: the median over the
        # cells both measured of that variant at that size, else of the variant at any size, else of any variant at
        # that size, else of all (1 where they share none): a script's speed moves with the machine in its own way
        self.scales = {}
        for key in KEYS:
            ratios = [(c["variant"], c["size"], c[key] / r[key]) for c, r in shared if r[key] > 0]
            for variant in {v for v, _, _ in [*own, *theirs]}:
                for size in SIZES:
                    tiers = [[x for v, z, x in ratios if match(v, z)] for match in scale_tiers(variant, size)]
                    self.scales[key, variant, size] = statistics.median(next((t for t in tiers if t), [1.0]))
        # every cell measured on either machine, the reference's scaled to this one: a cell neither measured is
        # derived from all of them (an env only this machine ran, a variant only the other did)
        scaled = {(v, e, z): {key: c[key] * self.scales[key, v, z] for key in KEYS} for (v, e, z), c in theirs.items()}
        self.cells = {**scaled, **own}

    def env_extra(self, variant: str, env: str, size: str):
        """The seconds `env` adds to a run's setup, iteration 0 and later iterations over the typical env's, or None
        where no variant ran it: what it added to this variant's run at the first size where the variant ran it, else
        the median of what it added to the other variants' runs, at this size if any ran it there. An env's step costs
        the same whatever the network, so on an env that dwarfs the network (Craftax) this holds where a ratio to the
        typical env would multiply the network's time by the env's."""

        def added(cell, typical):
            return {key: max(0.0, cell[key] - typical[key]) for key in KEYS}

        for at in SIZE_OF.values():
            cell, typical = self.cells.get((variant, env, at)), self.typical(variant, at)
            if cell and typical:
                return added(cell, typical)
        for at in (size, *(z for z in SIZE_OF.values() if z != size)):
            others = [added(c, t) for (v, e, z), c in self.cells.items() if e == env and z == at and (t := self.typical(v, z))]
            if others:
                return {key: statistics.median(a[key] for a in others) for key in KEYS}
        return None

    def typical(self, variant: str, size: str):
        """The variant's median cell over the environments measured at that size, or None."""
        cells = [c for (v, _, s), c in self.cells.items() if v == variant and s == size]
        if not cells:
            return None
        return {key: statistics.median(c[key] for c in cells) for key in KEYS}

    def cell(self, variant: str, env: str, size: str):
        """The cell's setup, iteration 0 and later iteration: measured (here, or on the reference machine and scaled to
        this one), else the variant's typical cell at that size plus what the env adds; None where nothing is known of
        the variant at that size."""
        cell = self.cells.get((variant, env, size))
        if cell is None:
            cell = self.typical(variant, size)
            extra = self.env_extra(variant, env, size) if cell else None
            if extra:
                cell = {key: cell[key] + extra[key] for key in KEYS}
        return cell

    def seconds(self, variant: str, env: str, size: str, iterations: int, seeds: int = 1):
        """The estimated seconds of one run, or None where nothing is known of the variant at that size. A run
        of several seeds at once (--num-seeds) is priced as `seeds` times the later iterations of one."""
        cell = self.cell(variant, env, size)
        if cell is None:
            return None
        startup = self.startup.get(FRAMEWORK.get(variant), max(self.startup.values(), default=0.0))
        return startup + cell["setup_s"] + cell["first_s"] + (iterations - 1) * cell["later_s"] * seeds


def duration(seconds: float) -> str:
    """'1:05 (h:mm)', or with the days counted out: a sweep that takes days must say so plainly."""
    minutes = round(seconds / 60)
    days, minutes = divmod(minutes, 24 * 60)
    return (f"{days} day{'s' * (days > 1)} " if days else "") + f"{minutes // 60}:{minutes % 60:02d} (h:mm)"


class Prices:
    """The seconds of a run, from the tables in `costs` (a directory of tables, or one table): this machine's own first
    (named by `cpu`), the fullest otherwise; what it lacks from the other table that shares most of its cells, scaled.
    gpu: for a GPU, from the tables made of GPU runs (this machine's GPU model's first), every size they lack priced
    as size s; without any, derived from the CPU's costs, start-up, setup and iteration 0 as there and every size priced
    as size s (a JAX iteration on the CPU takes 9 times as long at m as at s, 300 times at l; a GPU's, bound at these
    widths by kernel launches and the rollout's sequential steps, far less). Here as on a CPU, a setting never measured
    is priced as its script. Raises OSError or ValueError for tables it cannot read."""

    def __init__(self, costs: Path = COSTS, gpu: bool = False, cpu=None):
        tables = [json.loads(p.read_text()) for p in (sorted(costs.glob("*.json")) if costs.is_dir() else [costs])]
        gpu_tables = [t for t in tables if t.get("gpu")]
        self.gpu, self.from_gpu = gpu, gpu and bool(gpu_tables)
        self.cpu_tables = [t for t in tables if not t.get("gpu")]  # off-policy runs no GPU table has: theirs
        tables = gpu_tables if self.from_gpu else self.cpu_tables
        if not tables:
            raise ValueError(f"no table in {costs}")
        here = gpu_names() if self.from_gpu else [cpu or cpu_model()]
        self.own = next((t for t in tables if t["cpu"] in here), None)
        self.table = self.own or max(tables, key=lambda t: len(t["cells"]))
        self.tables = tables
        # for what this table lacks: the other table that measured most of the same cells, as it shares most to scale by
        keys = {(c["variant"], c["env"], c["size"]) for c in self.table["cells"]}
        shared = {id(t): len(keys & {(c["variant"], c["env"], c["size"]) for c in t["cells"]}) for t in tables}
        self.reference = max(
            (t for t in tables if t is not self.table and shared[id(t)]), key=lambda t: shared[id(t)], default=None
        )
        self.estimator = Estimator(self.table, self.reference)
        self.measured = {v for v, _, _ in self.estimator.cells}
        self.envs = {e for _, e, _ in self.estimator.cells}

    def run_seconds(self, key: str, framework: str):
        """An off-policy run's seconds (run_key's key): start-up and the median whole run of its name on this machine's
        table, else on the fullest table that ran it (unscaled: such runs share no cell to scale by), a CPU's where no
        GPU's did; None if none did."""
        fullest = lambda found: sorted(found, key=lambda t: -len(t.get("runs", {})))  # noqa: E731
        tables = [self.table, *fullest(self.tables), *fullest(self.cpu_tables)]
        for table in tables:
            if key in table.get("runs", {}):
                startup = table["startup_s"].get(framework, max(table["startup_s"].values(), default=0.0))
                return startup + table["runs"][key]["total_s"]
        return None

    def seconds(self, variant: str, env: str, size: str, iterations: int, seeds: int = 1):
        """The run's estimated seconds, or None where nothing is known of its variant at its size."""
        if variant not in self.measured:  # a setting never measured (CUDA graphs, an env stack) is priced as its script
            variant = variant.split("+")[0]
        if self.gpu and not self.from_gpu:
            size = "s"
        found = self.estimator.seconds(variant, env, size, iterations, seeds)
        if found is None and "+" in variant:  # a setting measured at another size only: priced as its script
            found = self.estimator.seconds(variant.split("+")[0], env, size, iterations, seeds)
        if found is None and self.from_gpu:
            found = self.estimator.seconds(variant, env, "s", iterations, seeds)
        return found

    def source(self) -> str:
        """Where the prices come from, for the estimate's line."""
        if self.gpu and not self.from_gpu:
            return f"estimate from CPU costs; a GPU will differ (runs measured on {self.table['cpu']}, every size priced as size s)"
        text = f"from runs measured on {self.table['cpu']}" + (
            "" if self.own else f", not on this {'GPU' if self.gpu else 'CPU'}"
        )
        text += f" (what it lacks, from {self.reference['cpu']}, scaled)" if self.reference else ""
        return text + (", a size not measured there priced as size s" if self.from_gpu else "")


def abbreviated(names) -> list:
    """At most four of the names, sorted: three and "N more" where there are more."""
    shown = sorted(names)
    return shown if len(shown) <= 4 else [*shown[:3], f"{len(shown) - 3} more"]


def estimate(lines, costs: Path = COSTS, at_once: int = 1, gpu: bool = False, source: bool = True, cpu=None) -> str:
    """One line: the estimated duration of the runs given as "VARIANT ENV SIZE ITERATIONS [SEEDS]" lines, `at_once` at a
    time, and (source) what it comes from (Prices: costs, gpu and cpu)."""
    try:
        prices = Prices(costs, gpu, cpu)
    except (OSError, ValueError) as e:
        return f"no estimate: cannot read {costs} ({e})"
    total, known, unknown, unmeasured_envs = 0.0, 0, set(), set()
    for line in (line for line in lines if line.strip()):
        if line.startswith("run "):  # an off-policy run: "run FRAMEWORK ALGORITHM NAME", priced whole by its name
            _, framework, algorithm, name = line.split()
            seconds = prices.run_seconds(run_key(algorithm, name), framework)
            if seconds is None:
                unknown.add(run_key(algorithm, name))
            else:
                total, known = total + seconds, known + 1
            continue
        variant, env, size, iterations, *seeds = line.split()
        if env not in prices.envs:
            unmeasured_envs.add(env)
        seconds = prices.seconds(variant, env, size, int(iterations), int(seeds[0]) if seeds else 1)
        if seconds is None:
            unknown.add(f"{variant.split('+')[0] if variant not in prices.measured else variant} at size {size}")
        else:
            total, known = total + seconds, known + 1
    if not known and unknown:  # "estimated 0:00 for 0 runs" would read as a sweep of no cost
        return f"no estimate: no measured cost for {', '.join(abbreviated(unknown))}" + (
            f" ({prices.source()})" if source else ""
        )
    text = f"estimated {duration(total / at_once)} for {known} runs" + (f", {at_once} at a time" if at_once > 1 else "")
    if source:
        text += ("; " if gpu and not prices.from_gpu else ", ") + prices.source()
    if unknown:
        text += f"; no measured cost for {', '.join(abbreviated(unknown))}: their runs are not counted"
    if unmeasured_envs:  # priced as a typical env, which a dear env's step may exceed many times over
        text += f"; {', '.join(sorted(unmeasured_envs))} never measured: priced as a typical environment, too low if its step is dear"
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="the table from records")
    make.add_argument("directories", nargs="+", type=Path)
    make.add_argument("--out", type=Path, help="where to write the table (default: the CPU model's own, in bench/costs)")
    make.add_argument("--log", type=Path, help="the sweep's output, whose run times give each framework's start-up")
    guess = commands.add_parser("estimate", help='the duration of the runs on stdin, one "VARIANT ENV SIZE ITERATIONS" a line')
    guess.add_argument("--costs", type=Path, default=COSTS, help="a directory of tables, or one table")
    guess.add_argument("--at-once", type=int, default=1, help="runs at a time (benchmark.sh --jobs)")
    guess.add_argument("--gpu", action="store_true", help="for a GPU: derived from the CPU costs (see estimate)")
    args = parser.parse_args(argv)
    if args.command == "build":
        startup = startup_from_log(args.log, args.directories) if args.log else {}
        table = build(args.directories, args.out, startup)
        print(f"wrote {args.out or table_path(table['cpu'])}: {len(table['cells'])} cells measured on {table['cpu']}")
    else:
        print(estimate(sys.stdin.read().splitlines(), args.costs, args.at_once, args.gpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
