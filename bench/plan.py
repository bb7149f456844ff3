"""The sweep's plan, for benchmark.sh: its arguments checked, the presets as data, and the runs in order.

benchmark.sh runs the plan (one runner for the serial sweep and --jobs, --task), handles signals and prints
--help; everything else about a sweep is decided here, once, so that --list, --task, --jobs, --slurm (bench/slurm.py),
--dry-run and the serial sweep share one plan and number its runs the same.

    python bench/plan.py plan ARGS...                  # benchmark.sh's ARGS checked, the plan as bash assignments
    python bench/plan.py status FILE [RUN]             # ok | failed | stale | corrupt | missing (RUN: a line of RUNS)
    python bench/plan.py failure FILE REASON CODE SECONDS LIMIT STDERR_FILE COMMAND...   # a run's failure record
    python bench/plan.py check-envs ENV...             # why an --envs id cannot be run, or nothing
    python bench/plan.py check-out OUT                 # why OUT cannot be written, or nothing (creates nothing)
    python bench/plan.py other-machine OUT             # a record in OUT from another CPU model or GPU, or nothing

A refused argument is one line on stderr, "benchmark.sh: ...", and exit code 2.
"""

import itertools
import os
import platform
import re
import shlex
import shutil
import subprocess
import sys
from types import SimpleNamespace
from typing import NamedTuple

if __name__ == "__main__" and not __package__:  # run as `python bench/plan.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.compiler_caches import warm_compiler_caches
from bench.outputs import out_problem
from bench.presets import COLD, ENV_FLAGS, EXPERIMENTS, FULL, HIDDEN, PRESETS, STACK_ENVS, TIMED, AllBut
from bench.run_records import other_machine, read_status, record_host, record_status, write_failure
from bench.variants import ROOT, VariantError, discover, modules, scripts


class Run(NamedTuple):
    """One run of the plan. benchmark.sh reads it as one tab-separated line of every field but the variant (line())."""

    name: str  # EXPERIMENT/VARIANT__ENV__SIZE[__nNUM_ENVS][__kSEEDS]__seedSEED, its record's name in OUT
    script: str
    env: str
    hidden: str  # as --hidden takes it
    seed: int
    experiment: str
    size: str
    iterations: int
    flags: str  # every flag beyond those above, space-separated (empty for learn's defaults)
    variant: str  # the script's variant, a setting of it (jax_nnx+nocache) or a stack (torch+torchenv)

    def line(self) -> str:
        """The run as benchmark.sh reads it: NAME SCRIPT ENV HIDDEN SEED EXPERIMENT SIZE ITERATIONS FLAGS."""
        return "\t".join(map(str, self[:-1]))

    @classmethod
    def from_line(cls, line: str) -> "Run":
        """A run from its line (every field a string); the line leaves the variant out, its name holds it."""
        name, *rest = line.split("\t")
        return cls(name, *rest, variant=name.split("/")[1].split("__")[0])


class Refused(Exception):
    """An argument benchmark.sh refuses: one line, exit 2."""


VALUE_OPTIONS = [
    "--preset",
    "--out",
    "--variants",
    "--envs",
    "--sizes",
    "--repeats",
    "--iterations",
    "--experiments",
    "--timeout",
    "--caches",
]
MODE_OPTIONS = ["--task", "--jobs", "--devices", "--part"]  # whose value may be neither empty nor an option
FLAGS = ["--list", "--slurm", "--dry-run", "--retry-failed", "--keep-stale"]


def parse(argv: list) -> SimpleNamespace:
    """benchmark.sh's arguments (--help is its own), unchecked; `forward`: those that choose the plan, for --slurm's
    tasks (not --out, which they are given absolute)."""
    given = {**dict.fromkeys((option[2:] for option in VALUE_OPTIONS + MODE_OPTIONS), ""), "preset": "full"}
    a = SimpleNamespace(**given, list=False, slurm=False, dry_run=False, retry_failed=False, keep_stale=False, forward=[])
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in VALUE_OPTIONS + MODE_OPTIONS:
            if not args or arg in MODE_OPTIONS and args[0].startswith("--"):
                raise Refused(f"{arg} needs a value")
            if args[0] in VALUE_OPTIONS + MODE_OPTIONS + FLAGS + ["--help"]:  # a forgotten value: (a path: ./--dry-run)
                raise Refused(f"{arg} needs a value; got the option {args[0]}")
            if not args[0]:  # an empty list or path would otherwise mean the preset's, in silence
                raise Refused(f"{arg} needs a value; got an empty one")
            setattr(a, arg[2:], args.pop(0))
            if arg in VALUE_OPTIONS and arg != "--out":
                a.forward += [arg, getattr(a, arg[2:])]
        elif arg in FLAGS:
            setattr(a, arg[2:].replace("-", "_"), True)
            if arg in ("--retry-failed", "--keep-stale"):
                a.forward.append(arg)
        else:
            raise Refused(f"unknown argument '{arg}' (see --help)")
    return a


def fields(text: str) -> list:
    """The comma-separated `text` as a list, as bash's `IFS=, read -a` splits it (a trailing comma ends it)."""
    items = text.split(",")
    return items[:-1] if items[-1] == "" else items


def split_checked(text: str, option: str, valid=None) -> list:
    """`fields(text)`, each one of `valid` (if given), each once: a repeat is dropped with a note (it would plan the
    same runs twice)."""
    items = fields(text)
    if not items:
        raise Refused(f"{option}: empty list")
    for item in items:
        if valid is not None and item not in valid:
            raise Refused(f"{option}: unknown value '{item}'; valid: {' '.join(valid)}")
    once = list(dict.fromkeys(items))
    if len(once) < len(items):
        twice = sorted({item for item in items if items.count(item) > 1})
        print(f"benchmark.sh: note: {option} names {', '.join(twice)} more than once; each is planned once", file=sys.stderr)
    return once


def positive(text: str, message: str) -> int:
    if not (text.isascii() and text.isdigit() and text[0] != "0"):
        raise Refused(f"{message}; got '{text}'")
    return int(text)


def settings(a, names: list, stacks: list = ()) -> dict:
    """The preset's settings with the options applied: a list given replaces the preset's and its restrictions of
    that kind, in every experiment that uses it, except a variant's own, which --variants must name it to lift.
    `names`: the variant scripts; `stacks`: their environment stacks, which --variants may also name (a script on
    another stack, run as a variant of its own: the learn experiment's torch+torchenv)."""
    p = {**FULL, "variants": names, **PRESETS[a.preset]}
    p["restrict"] = {
        key: [v for v in names if v not in only] if isinstance(only, AllBut) else only for key, only in p["restrict"].items()
    }
    unrestricted = set()
    if a.variants:
        p["variants"] = split_checked(a.variants, "--variants", [*names, *stacks])
        unrestricted.add("variants")
    if a.envs:
        p["envs"] = p["learn_envs"] = split_checked(a.envs, "--envs")
        unrestricted.add("envs")
    if a.sizes:
        p["sizes"] = split_checked(a.sizes, "--sizes", list(HIDDEN))
        unrestricted.add("sizes")
    named = set(p["variants"]) if a.variants else set()

    def kept(key: str) -> bool:
        """A restriction of a kind no list replaced, or a variant's own (what it costs) that --variants did not name."""
        what, dim = key.split(":")
        return dim not in unrestricted or (what in names and what not in named)

    p["restrict"] = {key: only for key, only in p["restrict"].items() if kept(key)}
    if a.experiments:
        p["experiments"] = split_checked(a.experiments, "--experiments", EXPERIMENTS)
    # make_plan runs these at size s whatever --sizes says: a list without s would get size s in silence
    if a.sizes and "s" not in p["sizes"] and (at_s := [e for e in p["experiments"] if e in AT_SIZE_S]):
        many = len(at_s) > 1
        raise Refused(
            f"--sizes {a.sizes}: the {and_list(at_s)} experiment{'s' * many} run{'s' * (not many)} at size s only; add s"
            f" to --sizes, or leave {and_list(at_s)} out of --experiments"
        )
    if a.repeats:
        p["repeats"] = positive(a.repeats, "--repeats must be a positive integer")
    if a.iterations:
        # a steady time needs iteration 0 (compilation) and at least one after it
        n = positive(a.iterations, "--iterations must be an integer of at least 2")
        if n < 2:
            raise Refused(f"--iterations must be an integer of at least 2; got '{a.iterations}'")
        p.update(iterations=n, iterations_at={}, iterations_in={}, stacks_iterations=n)
        p["iterations_of"] = {v: min(cap, n) for v, cap in p["iterations_of"].items()}
    if a.timeout:
        p["timeout"] = positive(a.timeout, "--timeout must be a positive integer (seconds)")
    if a.caches and a.caches not in ("warm", "cold"):
        raise Refused(f"--caches must be warm or cold; got '{a.caches}'")
    p["caches"] = a.caches or "warm"
    return p


# The experiments whose runs make_plan makes at size s alone, whatever --sizes says (learn: each script's defaults)
AT_SIZE_S = {"scaling", "seeds", "learn"}


def devices_and_jobs(a, gpu_check: bool) -> tuple:
    """--list, --task, --jobs/--devices, --slurm and --dry-run checked, each valid and alone: the GPUs to run on
    (none: the CPU, or whatever each run finds) and the runs at once (None: not given)."""
    if a.list + a.dry_run + a.slurm + bool(a.task) > 1:
        raise Refused("--list, --task, --slurm and --dry-run do not combine; give one")
    jobs = positive(a.jobs, "--jobs must be a positive integer") if a.jobs else None
    if (a.jobs or a.devices) and (a.list or a.dry_run) or (a.task and (a.jobs or a.devices)):
        raise Refused("--jobs and --devices do not combine with --list, --task or --dry-run")
    if a.slurm and a.devices:
        raise Refused("--devices does not combine with --slurm (SLURM gives each task its GPU)")
    if gpu_check and (a.list or a.slurm or a.task or a.jobs or a.devices or a.part):
        raise Refused("the gpu-check preset is a check, not a sweep: it has no runs to list, split or submit")
    if a.part and (a.list or a.slurm or a.task):
        raise Refused("--part does not combine with --list, --task or --slurm (they number the whole plan)")
    if a.devices:
        devices = fields(a.devices)
        if not devices:
            raise Refused("--devices: empty list")
        for d in devices:
            if not re.fullmatch(r"[0-9]+|(GPU|MIG)-[0-9A-Za-z/-]+", d):
                raise Refused(f"--devices: '{d}' is not a GPU index (0,1,...) or UUID")
        if len(set(devices)) != len(devices):
            raise Refused(f"--devices: '{a.devices}' names a device twice")
        return devices, jobs or len(devices)
    return (visible_gpus() if jobs and not a.slurm else []), jobs


def visible_gpus() -> list:
    """The GPUs this process may use: CUDA_VISIBLE_DEVICES's, else those nvidia-smi lists, else none."""
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        return fields(os.environ["CUDA_VISIBLE_DEVICES"])
    if not shutil.which("nvidia-smi"):
        return []
    try:
        listed = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True, text=True)
    except OSError:
        return []
    # Without a GPU (or its driver), nvidia-smi says so on stdout and fails: no index then.
    return [line.strip() for line in listed.stdout.splitlines() if line.strip().isdigit()] if listed.returncode == 0 else []


def check_jobs(runs: list, jobs: int, devices: list) -> None:
    """No --jobs that would time runs side by side on one device."""
    if jobs == 1 or all(run.experiment == "learn" for run in runs):
        return
    if not devices:
        raise Refused(
            f"--jobs {jobs} refused: no GPUs (no --devices, no nvidia-smi), and timing runs side by side on the CPU would"
            " slow each other; only --experiments learn may run several at once here"
        )
    if jobs > len(devices):
        raise Refused(
            f"--jobs {jobs} refused: only {len(devices)} devices ({','.join(devices)}), and timing runs never share a device"
        )


def permits(restrict: dict, key: str, dim: str, item: str) -> bool:
    """Does restrict allow `item` (a variant, env or size) for `key` (an experiment, a size or a variant)?"""
    only = restrict.get(f"{key}:{dim}")
    return not only or item in only


def make_plan(p: dict, variants: list) -> list:
    """The runs (Run), in the order they run.

    The seed is the outermost loop: the plan is `repeats` rounds, each a block of every cell of every experiment,
    so a sweep stopped part way has every cell with fewer seeds rather than some cells with all. The variant is the
    innermost loop of every experiment: the runs a speedup compares follow each other, so a shared machine's slow
    spells (tens of percent here) fall on both sides of a ratio. Each seed of a cell is one such block, and the
    variants' order rotates from block to block, so that no variant always runs first after a pause (or after a
    run that leaves the machine warm). A preset with groups reorders the blocks, each as it was: group by group, and
    in a group every seed of a cell before the next (ordered_by_groups)."""
    by_name = {v.name: v for v in variants}  # the scripts and their settings (jax_nnx+nocache)
    settings_of, stacks_of = {}, {}  # each script's settings and environment stacks in this plan
    for v in variants:
        if v.setting_of:
            (stacks_of if v.stack else settings_of).setdefault(v.setting_of, []).append(v.name)
    restrict, iteration, runs = p["restrict"], p["iteration"], []

    def allowed(key, dim, items):
        return [x for x in items if permits(restrict, key, dim, x)]

    def block(exp, env, size, seed, num_envs, iterations, flags, names, tag=""):
        for v in (names[(i + seed - 1) % len(names)] for i in range(len(names))):  # rotated by seed
            if seed > min(p["max_seeds"].get(v, p["repeats"]), p["repeats_in"].get(exp, p["repeats"])):
                continue
            if not allowed(v, "envs", [env]) or not allowed(v, "sizes", [size]):
                continue
            n = iterations if "+" in v else p["iterations_of"].get(v, iterations)  # a setting runs its cell's
            name, more = f"{exp}/{v}__{env}__{size}{tag}", [*ENV_FLAGS.get(env, []), *flags, *by_name[v].flags]
            if num_envs is not None:  # None: the script's defaults (learn)
                if exp == "scaling":
                    name += f"__n{num_envs:04d}"
                more += ["--num-envs", num_envs, "--num-steps", iteration["num_steps"]]
                more += ["--num-minibatches", iteration["num_minibatches"], "--update-epochs", iteration["update_epochs"]]
                more += ["--total-timesteps", num_envs * iteration["num_steps"] * n]
            flags_text = " ".join(map(str, more))
            runs.append(
                Run(f"{name}__seed{seed}", by_name[v].script, env, HIDDEN[size], seed, exp, size, n or 100, flags_text, v)
            )

    def grid(exp, seed, flags, names):
        for env in allowed(exp, "envs", p["envs"]):
            for size in allowed(exp, "sizes", p["sizes"]):
                if permits(restrict, size, "envs", env):
                    iterations = p["iterations_in"].get(env, p["iterations_at"].get(size, p["iterations"]))
                    block(exp, env, size, seed, iteration["num_envs"], iterations, flags, names)

    names = p["variants"]
    # Beside their scripts: in every overall block, where the preset says so, the GPU-only settings made by flags
    # (CUDA graphs); in every sync block, those made by the environment (XLA's command buffers for loops), whose
    # point is the rollout's loop. A plan without a GPU has neither.
    flagged = lambda s: by_name[s].gpu_only and not by_name[s].environment
    beside = {
        "overall": {v: [s for s in settings_of.get(v, []) if flagged(s)] for v in names} if p["settings_in_overall"] else {},
        "sync": {v: [s for s in settings_of.get(v, []) if by_name[s].environment] for v in names},
    }
    for seed in range(1, p["repeats"] + 1):
        for exp in p["experiments"]:
            if exp in ("overall", "sync"):
                chosen = [n for v in allowed(exp, "variants", names) for n in (v, *beside[exp].get(v, []))]
                grid(exp, seed, ["--sync-timing"] if exp == "sync" else [], chosen)
            elif exp == "compile":  # from cold: every script with its settings (compilation off, CUDA graphs), in blocks
                grid(exp, seed, [], [n for v in allowed(exp, "variants", names) for n in (v, *settings_of.get(v, []))])
            elif exp == "stacks":  # each script with a stack beside it on gymnax's envs, rollout and update timed apart
                chosen = [n for v in allowed(exp, "variants", names) if v in stacks_of for n in (v, *stacks_of[v])]
                for env in [e for e in allowed(exp, "envs", p["envs"]) if e in STACK_ENVS]:  # what the stacks have
                    for size in allowed(exp, "sizes", p["sizes"]):
                        block(exp, env, size, seed, iteration["num_envs"], p["stacks_iterations"], ["--sync-timing"], chosen)
            elif exp == "scaling":
                for n in p["scaling_num_envs"]:
                    block(exp, "CartPole-v1", "s", seed, n, p["scaling_iterations"], [], allowed(exp, "variants", names))
            elif exp == "seeds":  # N seeds at once where a script takes --num-seeds; one seed alone, every variant
                for env in allowed(exp, "envs", p["envs"]):
                    for k in p["seeds_num_seeds"]:
                        which = [v for v in allowed(exp, "variants", names) if k == 1 or by_name[v].num_seeds]
                        flags = ["--num-seeds", k] if k > 1 else []
                        block(exp, env, "s", seed, iteration["num_envs"], p["seeds_iterations"], flags, which, f"__k{k:03d}")
            else:  # learn: each script's defaults
                for env in p["learn_envs"]:
                    block(exp, env, "s", seed, None, None, [], allowed(exp, "variants", names))
    if p["groups"]:
        runs.sort(key=lambda run: ordered_by_groups(run, p))  # a sort is stable: seeds and blocks keep their order
    return runs


def group_of(run: Run, groups: list) -> int:
    """The index of the first of the preset's groups that takes the run; len(groups) for none."""
    for i, group in enumerate(groups):
        in_envs = run.env in group.get("envs", [run.env])
        if run.experiment in group["experiments"] and in_envs and int(run.seed) <= group.get("seeds", 1e9):
            return i
    return len(groups)


def ordered_by_groups(run: Run, p: dict) -> tuple:
    """Where a run goes in a plan ordered by the preset's groups: by group, then every seed of a cell (size, env,
    experiment) before the next cell."""
    sizes, envs = (dict(zip(items, range(len(items)))) for items in (p["sizes"], p["envs"]))
    where = sizes.get(run.size, len(sizes)), envs.get(run.env, len(envs)), EXPERIMENTS.index(run.experiment)
    return group_of(run, p["groups"]), *where


def bash(name: str, value) -> str:
    """An assignment bash can eval: a scalar, or an array from a list."""
    if isinstance(value, list):
        return f"{name}=({' '.join(shlex.quote(str(x)) for x in value)})"
    return f"{name}={shlex.quote(str(value))}"


def warm(p: dict, experiment: str) -> bool:
    """Whether the experiment's runs load their programs from the sweep's shared compiler caches."""
    return p["caches"] == "warm" and experiment not in COLD


def and_list(items) -> str:
    """ "a, b and c": a list in a sentence."""
    items = list(items)
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def impossible(runs: list, by_name: dict) -> str:
    """A planned run its script would refuse (what a setting's flags cannot do with the run's), named, or ''."""
    for run in runs:
        v = by_name[run.variant]
        if "--env-backend" in v.flags and run.env not in STACK_ENVS:  # torch_envs.py's and Gymnasium's environments
            return f"{run.variant} runs on {and_list(STACK_ENVS)} only, not --envs {run.env}"
        if "--rollout" in v.flags and "--num-seeds" in str(run.flags).split():
            return f"{run.variant} steps its rollout from Python, one seed at a time: not in the seeds experiment"
    return ""


def why_empty(p: dict, variants: list) -> str:
    """Why a plan has no run: what the experiments asked for and cannot take."""
    reasons = []
    if "stacks" in p["experiments"]:
        if not set(p["envs"]) & set(STACK_ENVS):
            reasons.append(f"the stacks experiment runs on {and_list(STACK_ENVS)} only (the stacks' environments)")
        stacked = sorted({v.setting_of for v in variants if v.stack})
        if not set(p["variants"]) & set(stacked):
            reasons.append(f"the stacks experiment runs {', '.join(stacked)} only (the scripts with stacks)")
    experiments = ",".join(p["experiments"])
    return "; ".join(reasons) or f"--experiments {experiments} takes none of these --variants, --envs and --sizes"


def load(argv: list) -> SimpleNamespace:
    """benchmark.sh's arguments checked (or Refused), and the plan they choose."""
    a = parse(argv)
    if a.preset not in PRESETS:
        raise Refused(f"unknown preset '{a.preset}'; valid: {' '.join(PRESETS)}")
    try:
        variants = discover()
    except VariantError as e:
        raise Refused(f"cannot list the variants: {e}") from None
    p = settings(a, [v.name for v in scripts(variants)], [v.name for v in variants if v.stack and not v.gpu_only])
    devices, jobs = devices_and_jobs(a, p["gpu_check"])
    sweep = not (a.list or a.slurm or a.task or p["gpu_check"])  # the serial sweep, --jobs or --dry-run
    # The settings only a GPU runs are in the plans meant for a GPU. A sweep on a machine without one leaves them
    # out; --list, --task and --slurm keep them, so that a run has the same index where it is listed or submitted as
    # on the GPU node that runs it.
    gpu_only = [v.name for v in variants if v.gpu_only] if p["for_gpu"] else []
    on_gpu = p["for_gpu"] and bool(devices or visible_gpus())  # a plan for a GPU that runs on one (asks nvidia-smi)
    left_out = gpu_only if sweep and gpu_only and not on_gpu else []
    planned = [v for v in variants if p["for_gpu"] or not v.gpu_only]
    every = [] if p["gpu_check"] else make_plan(p, planned)
    part = parts_of(every, p)  # cut from the whole plan, the GPU-only settings included, wherever it is made
    runs = [run for run in every if run.variant not in left_out]
    part = [k for k, run in zip(part, every) if run.variant not in left_out]
    if not runs and not p["gpu_check"]:
        raise Refused(f"nothing to run: {why_empty(p, variants)}")
    if problem := impossible(runs, {v.name: v for v in planned}):
        raise Refused(problem)
    if a.task:
        if not (a.task.isascii() and a.task.isdigit() and a.task[0] != "0" and int(a.task) <= len(runs)):
            raise Refused(f"--task must be one of the plan's indices, 1..{len(runs)} (see --list); got '{a.task}'")
        variant = runs[int(a.task) - 1].variant
        if variant in gpu_only and not visible_gpus():
            raise Refused(f"--task {a.task}: {variant} needs a GPU, and none is visible here")
    n = max(part, default=1)
    if a.part and a.part != "next" and not (a.part.isascii() and a.part.isdigit() and a.part[0] != "0" and int(a.part) <= n):
        raise Refused(f"--part must be next or one of 1..{n} (the preset's parts); got '{a.part}'")
    if sweep:
        check_jobs(runs, jobs or 1, devices)
    out = os.path.realpath(a.out or f"benchmark_out/{a.preset}")  # absolute: the runs get it in --json-out
    compiled = {v.name for v in planned if v.compiles == "torch.compile"}
    if any(c.isspace() for c in out) and any(run.variant in compiled for run in runs):
        # Inductor builds its C++ in the run's caches under OUT and splits the compiler's command at spaces
        raise Refused(f"--out {out!r} has a space, which torch.compile's C++ build cannot take; name one without")
    return SimpleNamespace(
        args=a,
        p=p,
        variants=planned,
        runs=runs,
        part=part,
        devices=devices,
        jobs=jobs,
        sweep=sweep,
        out=out,
        left_out=left_out,
        on_gpu=on_gpu,
    )


def begun_elsewhere(runs: list, found: dict, out: str) -> dict:
    """{index: ("elsewhere", why)} for the records of the blocks begun on another machine (host) and not finished: a
    block's runs are compared with each other, so a sweep resumed on another machine (of the same GPU or CPU model)
    times such a block again, whole, here, and replaces what the other machine made of it."""
    here, blocks, redo = platform.node(), {}, {}
    for i, run in enumerate(runs):
        blocks.setdefault(block_of(run), []).append(i)
    for members in blocks.values():
        if all(found[i][0] == "ok" for i in members):
            continue
        for i in members:
            host = record_host(os.path.join(out, f"{runs[i].name}.json")) if found[i][0] == "ok" else here
            if host != here:
                redo[i] = (
                    "elsewhere",
                    f"timed on {host}, the rest of its block to be timed here: a block is timed on one machine",
                )
    return redo


def seeds_of(run: Run) -> int:
    """How many seeds a run trains at once: its --num-seeds, else 1."""
    flags = run.flags.split()
    return int(flags[flags.index("--num-seeds") + 1]) if "--num-seeds" in flags else 1


def variant_of(run: Run) -> str:
    """The variant (or setting) a run of the plan runs, for the tests that ask it of a run."""
    return run.variant


def block_of(run: Run) -> tuple:
    """A run's block, the runs a ratio compares, run back to back: its experiment, and its name after its variant (env,
    size, num_envs, seed)."""
    return run.experiment, run.name.removeprefix(f"{run.experiment}/{run.variant}__")


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


def estimate(runs: list, at_once: int, gpu: bool, source: bool = True) -> str:
    """Those runs' estimated duration, from the costs measured before (bench/run_costs.py: for a GPU, the GPU runs'
    where there are any), and (source) what it comes from."""
    try:
        from bench import run_costs

        lines = [f"{run.variant} {run.env} {run.size} {run.iterations} {seeds_of(run)}" for run in runs]
        return run_costs.estimate(lines, run_costs.COSTS, at_once, gpu, source)
    except Exception:  # an estimate is never worth stopping the sweep for
        return "no estimate (bench/run_costs.py failed)"


def openmp_override(frameworks: set) -> str:
    """A warning for the sweep's first lines when the environment overrides how the torch scripts' OpenMP threads
    wait (they set a short spin themselves, unless the environment already sets one; what GOMP_SPINCOUNT=0 did to
    them: docs/findings.md). The records keep the settings (cpu.openmp)."""
    found = [f"{name}={os.environ[name]}" for name in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY") if name in os.environ]
    if "torch" not in frameworks or not found:
        return ""
    return (
        f"  warning: {' '.join(found)} in the environment overrides the torch scripts' own OpenMP setting, which changes"
        " their speed (docs/findings.md); unset it unless that is what you measure"
    )


def kept_stale(stale: list) -> str:
    """--keep-stale's refusal of records made with other settings than the plan gives their runs, [(name, why)]: how
    many, and the first."""
    (name, why), n = stale[0], len(stale)
    records, runs, them = ("records", "their runs", "them") if n > 1 else ("record", "its run", "it")
    return (
        f"--keep-stale: {n} {records} made with other settings than this plan gives {runs} (the first, {name}: {why});"
        f" nothing run: give another --out, or drop --keep-stale to run {them} again"
    )


def plan_command(argv: list) -> int:
    """What benchmark.sh needs, as bash assignments: the options, the plan's settings and RUNS, one tab-separated
    "NAME SCRIPT ENV HIDDEN SEED EXPERIMENT SIZE ITERATIONS FLAGS" per run in the order they run (no field but
    FLAGS is ever empty); for a sweep, the runs TODO (indices into RUNS), what it prints first (INTRO) and, with
    --dry-run or --list, the LISTING."""
    try:
        plan = load(argv)
    except Refused as e:
        print(f"benchmark.sh: {e}", file=sys.stderr)
        return 2
    a, p, runs, out = plan.args, plan.p, plan.runs, plan.out
    jobs = plan.jobs or 1
    if a.task and a.keep_stale:  # its record was made otherwise, and is to be kept: the task would replace it
        run = runs[int(a.task) - 1]
        status, why = read_status(os.path.join(out, f"{run.name}.json"), run, warm(p, run.experiment))
        if status == "stale":
            print(f"benchmark.sh: {kept_stale([(run.name, why)])}", file=sys.stderr)
            return 2
    # What env_cost.py times: the environments of the timed experiments (plot.py's x-axis).
    cost_envs = {e for exp in TIMED if exp in p["experiments"] for e in p["envs"] if permits(p["restrict"], exp, "envs", e)}
    script = {v.name: v.script for v in plan.variants}
    # What bench/host_cost.py times: the sync and stacks experiments' environments where a torch script is timed (the
    # floor under its rollout, which plot.py splits off).
    framework = {v.name: v.framework for v in plan.variants}
    floor_wanted = lambda run: run.experiment in ("sync", "stacks") and framework[run.variant] == "torch"
    handover_envs = {run.env for run in runs if floor_wanted(run)}
    values = {
        "PRESET": a.preset,
        "OUT": out,
        "LIST": int(a.list),
        "DRY_RUN": int(a.dry_run),
        "SLURM": int(a.slurm),
        "TASK": a.task,
        "RETRY_FAILED": int(a.retry_failed),
        "JOBS": jobs,
        "DEVICES": plan.devices,
        "PARALLEL": int(jobs > 1 or bool(plan.devices)),  # else the serial sweep
        "GPU_CHECK": int(p["gpu_check"]),
        "TIMEOUT": p["timeout"],
        "NUM_ENVS": p["iteration"]["num_envs"],
        "VARIANTS": p["variants"],
        "MODULES": sorted({m for v in p["variants"] for m in modules(ROOT / script[v])}),
        "USER_ENVS": p["envs"] if a.envs else [],  # to check: the presets' own environments are known to be gymnax's
        "COST_ENVS": sorted(cost_envs),
        "HANDOVER_ENVS": sorted(handover_envs),
        "NUM_STEPS": p["iteration"]["num_steps"],
        # the runs of these experiments share the compiler caches under OUT/.caches, with this environment
        "WARM_EXPERIMENTS": [e for e in p["experiments"] if warm(p, e)],
        "WARM_ENV": [f"{k}={v}" for k, v in warm_compiler_caches(os.path.join(out, ".caches")).items()],
        "RUNS": [run.line() for run in runs],
        # what a setting made by the environment adds to a variable, VARIANT=NAME=VALUE (run_one adds VALUE to NAME's)
        "SETTING_ENVIRONMENTS": [f"{v.name}={'='.join(v.environment)}" for v in plan.variants if v.environment],
        "LISTING": "".join(f"{i} {run.name}\n" for i, run in enumerate(runs, 1)) if a.list else "",
    }
    if plan.sweep:
        part, n = plan.part, max(plan.part, default=1)
        found = {
            i: read_status(os.path.join(out, f"{run.name}.json"), run, warm(p, run.experiment)) for i, run in enumerate(runs)
        }
        moved = begun_elsewhere(runs, found, out)
        found |= moved
        status = {i: s for i, (s, _) in found.items()}
        done = {i: s == "ok" or s == "failed" and not a.retry_failed for i, s in status.items()}
        # --part next: the first part with a run to do (none when every part is done)
        k = min((part[i] for i in done if not done[i]), default=None) if a.part == "next" else int(a.part or 0) or None
        chosen = [i for i in range(len(runs)) if not a.part or part[i] == k]  # indices into runs
        if a.part:  # the probe's floors where this part times a torch script's rollout
            values["HANDOVER_ENVS"] = sorted({runs[i].env for i in chosen if floor_wanted(runs[i])})
        stale = [i for i in chosen if status[i] in ("stale", "corrupt")]  # made otherwise, or unreadable: not done
        if stale and a.keep_stale and not a.dry_run:  # refused before any work, not part way through the sweep
            print(f"benchmark.sh: {kept_stale([(runs[i].name, found[i][1]) for i in stale])}", file=sys.stderr)
            return 2
        todo = [i for i in chosen if not done[i]]
        where = ""
        if values["PARALLEL"]:
            where = f", {jobs} at a time " + (f"on devices {','.join(plan.devices)}" if plan.devices else "on the CPU")
        n_done = len(chosen) - len(todo)
        values["TODO"], values["SKIPPED"] = todo, n_done
        values["REDO"] = [i for i in todo if i in moved]  # ok records a run here replaces (claim_and_run)
        values["OLD_FAILED"] = sum(done[i] and status[i] == "failed" for i in chosen)
        intro = [
            f"benchback sweep: preset {a.preset}{f', part {k} of {n}' if k else ''}, {len(chosen)} runs"
            f" ({n_done} already done), out {out}, per-run limit {p['timeout']}s{where}",
            f"  {estimate([runs[i] for i in todo], jobs, p['for_gpu'])}",
        ]
        if a.part == "next" and not k:
            intro.append(f"  every part of the {n} is done")
        if again := [i for i in chosen if status[i] == "elsewhere"]:
            intro.append(
                f"  {len(again)} records are of blocks begun on another machine and not finished: each such block is"
                f" timed again here, whole (the first, {runs[again[0]].name}: {found[again[0]][1]})"
            )
        fate = "kept: --keep-stale refuses the sweep while they are here" if a.keep_stale else "run again and replaced"
        for kind, what in (
            ("stale", "were made with other settings than this plan gives their runs"),
            ("corrupt", "are corrupt"),
        ):
            if which := [i for i in stale if status[i] == kind]:
                first = which[0]
                intro.append(f"  {len(which)} records {what}: {fate} (the first, {runs[first].name}: {found[first][1]})")
        if p["for_gpu"] and not plan.on_gpu:  # a preset for a GPU, on a machine without one: what it costs here too
            intro.append(f"  here, without a GPU: {estimate([runs[i] for i in todo], jobs, False)}")
        if plan.left_out:
            intro.append(f"  {', '.join(plan.left_out)}: needs a GPU, left out (none is visible here)")
        if spin := openmp_override({framework[v] for v in p["variants"]}):
            intro.append(spin)
        values["INTRO"] = "".join(f"{line}\n" for line in intro)
        if a.dry_run:
            lines = [f"  {exp}: {k} runs" for exp in EXPERIMENTS if (k := sum(runs[i].experiment == exp for i in chosen))]
            if n > 1 and not a.part:  # each part's runs, and the estimate of what is left of it
                for k in range(1, n + 1):
                    members = [i for i in chosen if part[i] == k]
                    if members:
                        left = estimate([runs[i] for i in members if not done[i]], jobs, p["for_gpu"], source=False)
                        lines.append(f"  --part {k}: runs {members[0] + 1}-{members[-1] + 1}, {left}")
            for i in chosen:
                state = {"ok": "done", "elsewhere": "redo"}.get(status[i], status[i])
                shown = status[i] in ("stale", "elsewhere", "corrupt")
                state = state if done[i] or shown else "to-run"
                why = f"  ({status[i]}: {found[i][1]})" if shown else ""
                lines.append(f"[{i + 1}/{len(runs)}] {state:<6} {runs[i].name}  {runs[i].flags}{why}")
            lines.append(f"plan: {len(chosen)} runs, {n_done} already done, {len(todo)} to run")
            values["LISTING"] = "".join(f"{line}\n" for line in lines)
    print("\n".join(bash(name, value) for name, value in values.items()))
    return 0


def main(argv=None) -> int:
    command, *rest = sys.argv[1:] if argv is None else argv
    if command == "plan":
        return plan_command(rest)
    if command == "status":  # a RUN (a line of RUNS) makes a record made with other settings stale
        print(record_status(rest[0], Run.from_line(rest[1]) if len(rest) > 1 else None))
    elif command == "failure":
        write_failure(*rest)
    elif command == "check-envs":  # the environments a sweep can run, as env_cost.py checks them
        from env_cost import bad_env

        print(bad_env(rest))
    elif command == "check-out":  # as every tool checks its --out
        print(out_problem(rest[0], directory=True))
    elif command == "other-machine":
        print(other_machine(rest[0]) if os.path.isdir(rest[0]) else "")
    else:
        print(f"bench/plan.py: unknown command {command!r} (see its docstring)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
