"""benchmark.sh's arguments, for bench/plan.py: parsed, checked (a refused one raises Refused) and applied to the
preset's settings, and the devices and runs at once that --jobs and --devices choose."""

import os
import re
import shutil
import subprocess
import sys
from types import SimpleNamespace

from bench.presets import EXPERIMENTS, FULL, HIDDEN, PRESETS, AllBut


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
AT_SIZE_S = {"scaling", "seeds", "search", "learn"}


def and_list(items) -> str:
    """ "a, b and c": a list in a sentence."""
    items = list(items)
    return " and ".join([", ".join(items[:-1]), items[-1]] if len(items) > 1 else items)


def devices_and_jobs(a, gpu_check: bool) -> tuple:
    """--list, --task, --jobs/--devices, --slurm and --dry-run checked, each valid and alone: the GPUs to run on
    (none: the CPU, or whatever each run finds) and the runs at once (None: not given)."""
    if a.list + a.dry_run + a.slurm + bool(a.task) > 1:
        raise Refused("--list, --task, --slurm and --dry-run do not combine; give one")
    jobs = positive(a.jobs, "--jobs must be a positive integer") if a.jobs else None
    if (a.jobs or a.devices) and (a.list or a.task):  # (with --dry-run they give the estimate at that many at once)
        raise Refused("--jobs and --devices do not combine with --list or --task")
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
