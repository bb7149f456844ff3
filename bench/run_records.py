"""A sweep's records, for bench/plan.py: whether a run's record is done (made by the plan's run as planned today), the
failure record of a run that failed, and the check made before a sweep that no other machine (another CPU model,
another GPU) has records in its directory."""

import functools
import importlib.metadata
import json
import os
import platform
import subprocess
import time
from pathlib import Path

from bench.outputs import write_atomic
from bench.plan_runs import algorithm_of
from bench.variants import ALGORITHMS, NotALiteral, _number, _pairs, discover, script_defaults, setting_name, without_settings

declared = functools.cache(discover)  # read once: a plan asks it of every record it finds


@functools.cache
def every_declared() -> tuple:
    """The variants and settings of every algorithm's scripts: what any of them sets in its environment."""
    return tuple(v for algorithm in ALGORITHMS for v in declared(algorithm=algorithm))


def record_status(path: str, run: tuple = None) -> str:
    """ok | failed | stale | corrupt | missing: only ok and (without --retry-failed) failed count as done. With the
    plan's `run` (a Run of bench/plan.py's plan), a record made with other settings is stale: run again."""
    return read_status(path, run)[0]


def read_status(path: str, run: tuple = None, warm: bool = None) -> tuple:
    """(status, why it is stale or ''). With `warm` (whether the plan's run loads its programs from the sweep's shared
    compiler caches), an ok record made otherwise is stale too; a record from before records said so is taken as made
    either way."""
    if not os.path.exists(path):
        return "missing", ""
    try:
        record = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return "corrupt", "not whole JSON (a run cut short, a copy broken off?)"
    if not isinstance(record, dict) or not isinstance(record.get("status", "corrupt"), str):
        return "corrupt", "not a run's record"
    status = record.get("status", "corrupt")
    if run is not None and status in ("ok", "failed") and (why := other_settings(record, run)):
        return "stale", why
    caches = record.get("caches")
    if warm is not None and status == "ok" and isinstance(caches, dict) and bool(caches.get("persistent")) != warm:
        kind = lambda persistent: "warm" if persistent else "cold"
        return "stale", f"made with {kind(caches.get('persistent'))} compiler caches, the plan {kind(warm)}"
    return status, ""


def record_host(path: str):
    """The machine (host name) an ok record was timed on, None where it does not say."""
    try:
        return json.loads(Path(path).read_text()).get("host")
    except (OSError, ValueError, AttributeError):
        return None


def planned(run: tuple) -> list:
    """What the plan gives a run that changes its work, as (flag, value) pairs: its env, size, seed, experiment and
    every flag (iterations, num_envs, steps, minibatches, epochs, a setting's or a stack's own)."""
    given = ["--env-id", run.env, "--hidden", str(run.hidden), "--seed", str(run.seed), "--exp-name", run.experiment]
    given += str(run.flags).split()
    return _pairs(tuple(given))


# The Args fields that change nothing a record measures: where it is written, what it prints, TensorBoard's logs. Every
# other field is compared, exp_name too where the plan passes it (always: plot.py files a record by it).
NOT_WORK = {"json_out", "quiet", "tensorboard"}


def as_args(pairs, defaults: dict) -> dict:
    """A command's (flag, value) pairs applied to a script's Args defaults, as the script's parser sets them: --b 3: b
    is "3" (a flag's text, compared as a number where it is one); --c: c is true; --no-a: a is false."""
    args = dict(defaults)
    for flag, value in pairs:
        key = flag[2:].replace("-", "_")
        if value is not None:
            args[key] = value
        elif key.startswith("no_") and key not in defaults:
            args[key[3:]] = False
        else:
            args[key] = True
    return args


def same(made, wanted) -> bool:
    """A record's value against what the plan gives: a bool only as that bool, a number as a number ("1e-3" and 0.001
    alike), a flag's text as the value's text, a tuple as JSON's list."""
    if isinstance(made, bool) or isinstance(wanted, bool):
        return made is wanted
    if _number(made) is not None and _number(wanted) is not None:
        return _number(made) == _number(wanted)
    wanted = list(wanted) if isinstance(wanted, tuple) else wanted
    return made == wanted or isinstance(wanted, str) and not isinstance(made, (dict, list)) and str(made) == wanted


@functools.cache
def gpu_here() -> bool:
    """Whether a script given cuda (its default) would find a GPU here, as plan_args.visible_gpus finds them."""
    return bool(os.environ.get("CUDA_VISIBLE_DEVICES")) or bool(gpu_names())


def other_args(made: dict, run: tuple, device=None) -> str:
    """How `made` (a record's args, or a failure record's command read as args) differs from what the plan's command
    gives its run: the script's Args defaults, read from its source, with the plan's flags. '' where they are equal
    but for NOT_WORK; the plan's flags first, then the defaults, then what the script no longer has."""
    pairs = planned(run)
    defaults = script_defaults(Path(run.script).name)
    wanted = as_args(pairs, defaults)
    flagged = [flag[2:].replace("-", "_") for flag, _ in pairs]
    flagged = [k[3:] if k.startswith("no_") and k not in defaults else k for k in flagged]
    for key in dict.fromkeys([*flagged, *wanted, *made]):
        if key in NOT_WORK or key in made and key in wanted and same(made[key], wanted[key]):
            continue
        # cuda picks the device, where there is a GPU: without one, a run with --no-cuda ran where the plan's runs do
        if key == "cuda" and made.get(key) is False and wanted.get(key) is True and device == "cpu" and not gpu_here():
            continue
        shown = made.get(key, "not recorded")
        shown = "not given" if isinstance(shown, NotALiteral) else shown  # a failure record's command left it out
        if key not in wanted:
            return f"--{key.replace('_', '-')}: {shown}, which {run.script} does not take"
        if isinstance(wanted[key], NotALiteral):
            return f"--{key.replace('_', '-')}: {shown}, and {run.script}'s default is no literal ({wanted[key]})"
        plan = wanted[key] if key in flagged else f"{wanted[key]} ({run.script}'s default)"
        return f"--{key.replace('_', '-')}: {shown}, the plan {plan}"
    return ""


def other_settings(record: dict, run: tuple) -> str:
    """How a record was made otherwise than the plan makes its run ("--total-timesteps: 512, the plan 1280"), or ''.
    An ok record's settings are its args, every field; a failure record's, the command it ran, on its script's
    defaults."""
    if record.get("status") == "failed":
        command = record.get("command")
        if not (isinstance(command, list) and len(command) > 2 and str(command[2]).startswith("--")):
            return "its command is not recorded"
        given = _pairs(tuple(map(str, command[2:])))  # PYTHON SCRIPT --flag value ...
        return other_args(as_args(given, script_defaults(Path(run.script).name)), run)
    args = record.get("args") if isinstance(record.get("args"), dict) else {}
    planned_configs = dict(planned(run)).get("--configs")
    if planned_configs and args.get("configs") != planned_configs and same_configs(record, planned_configs):
        args = {**args, "configs": planned_configs}  # the same configurations from a checkout at another path
    if why := other_args(args, run, record.get("device")):
        return why
    # a setting's run: its record shows the setting's flags, no more
    own = declared(algorithm=algorithm_of(run))  # its own algorithm's scripts' stacks and settings, not PPO's
    if (shown := setting_name(str(record.get("variant")), args, own, settings_of(record))) != run.variant:
        return f"made as {shown}, the plan {run.variant}"
    return ""


def same_configs(record: dict, path: str) -> bool:
    """Whether the record trained the configurations the file at `path` holds (its `configs`, the values it read)."""
    try:
        return record.get("configs") == json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return False


def write_failure(path, reason, code, duration, limit, stderr_file, *command):
    """The failure record in place of a run's result, its fields read from the run's command; written as the scripts
    write their records (the same mode, no temporary file left on any failure)."""
    try:
        with open(stderr_file, errors="replace") as f:
            tail = f.read()[-4000:]
    except OSError:
        tail = ""
    value = dict(zip(command, command[1:]))  # each flag's value
    record = {
        "schema_version": 1,
        "status": "failed",
        "reason": reason,
        "exit_code": int(code),
        "experiment": value["--exp-name"],
        "variant": Path(command[1]).stem.removeprefix("ppo_"),
        "env_id": value["--env-id"],
        "hidden": [int(h) for h in value["--hidden"].split(",")],
        "seed": int(value["--seed"]),
        "duration": int(duration),
        "timeout_s": int(limit),
        "command": list(command),
        "stderr_tail": tail,
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_atomic(path, json.dumps(record, indent=1))


def cpu_model() -> str:
    """This machine's CPU model as the scripts' cpu_info() names it (tests/test_benchmark.py holds the two the same)."""
    cpuinfo = Path("/proc/cpuinfo")
    first = cpuinfo.read_text().split("\n\n")[0] if cpuinfo.exists() else ""
    info = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = info.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in info:
        model += f" (family {info['cpu family']}, model {info.get('model')})"
    return model


def gpu_names() -> list:
    """This machine's GPUs' names as nvidia-smi gives them, none without it. The scripts record jax's device_kind or
    torch's device name: on the H100 seen here all three were "NVIDIA H100 80GB HBM3"."""
    try:
        listed = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True)
    except OSError:
        return []
    # Without a GPU (or its driver), nvidia-smi says so on stdout and fails: no name then.
    return [line.strip() for line in listed.stdout.splitlines() if line.strip()] if listed.returncode == 0 else []


ALLOCATOR = ("GLIBC_TUNABLES", "LD_PRELOAD")  # the variables the scripts' cpu_info() records under "allocator"
# glibc's documented malloc tunables (glibc manual, "Memory Allocation Tunables"), as the studies set them (records
# made under any of them name it in cpu.allocator). KEEP_FREED: never serve an allocation by mmap, and give a heap's
# free top back to the kernel only past 4 GiB; ONE_ARENA: every thread allocates from the main arena (by default
# threads get arenas of their own, up to 8 per core). KEEP_MEMORY, both: the setting the full Craftax was timed under.
KEEP_FREED = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967296"
ONE_ARENA = "glibc.malloc.arena_max=1"
KEEP_MEMORY = f"{KEEP_FREED}:{ONE_ARENA}"
# XLA's CPU backend runs a matrix product on Eigen's thread pool unless told to keep each operation on one thread
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false"


KEPT_APART = (*ALLOCATOR, "XLA_FLAGS")  # variables of the environment under which two runs' times are not compared
# OpenMP's, which the scripts' cpu_info() records under "openmp": how torch's threads wait changes its time twofold.
# The values the scripts give themselves when the environment has none (the torch scripts' wait) count as none.
OPENMP = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")


def openmp_setting(variables) -> str:
    """The OpenMP variables among `variables` (a record's cpu.openmp, or os.environ) other than the torch scripts'
    own, as one string, '' for none: a sweep is not resumed under others than its records'."""
    own = dict(pair for v in every_declared() for pair in v.defaults)
    kept = {name: variables.get(name) for name in OPENMP if variables.get(name) not in (None, own.get(name))}
    return " ".join(f"{name}={value}" for name, value in kept.items())


def run_setting(variables) -> str:
    """The settings among `variables` (a record's, as settings_of reads them, or os.environ) as one string, '' for
    the defaults: timings under two settings are never compared. What a variant's setting adds to a variable (XLA's
    command buffers for loops), or a script gives itself (own_words), is left out: that run is compared with its
    script's, as a setting of it."""
    kept = {name: without_settings(name, variables.get(name), every_declared()) for name in KEPT_APART}
    kept = {name: " ".join(w for w in (value or "").split() if w not in own_words(name)) for name, value in kept.items()}
    return " ".join(f"{name}={value}" for name, value in kept.items() if value)


@functools.cache
def own_words(name: str) -> frozenset:
    """The words that scripts of any algorithm give the variable `name` themselves where it has no value (the JAX SAC
    and TD3 scripts' XLA command buffers for a GPU's conds): a script's own default is not another machine."""
    return frozenset(w for v in every_declared() for n, value in v.defaults if n == name for w in value.split())


def settings_of(record: dict) -> dict:
    """A record's settings by variable: its cpu.allocator and its xla_flags. Records from before either was recorded
    ran under none."""
    return {**((record.get("cpu") or {}).get("allocator") or {}), "XLA_FLAGS": record.get("xla_flags")}


def other_versions(versions: dict) -> str:
    """How a record's library versions differ from this interpreter's ("torch 2.11.0, here 2.13.0"), or ''."""
    for name, version in versions.items():
        try:
            installed = platform.python_version() if name == "python" else importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            installed = "none"
        if installed != version:
            return f"{name} {version}, and this machine has {installed}"
    return ""


def other_machine(out: str) -> str:
    """A record in `out` timed on another kind of machine than this one, named with both, or '': on a CPU, another CPU
    model; on a GPU, a GPU model this machine does not have, or other versions of the libraries (a sweep of one GPU
    model may go on on another machine with that GPU, whatever its CPU: plot.py pools their blocks, each block timed
    on one machine); on a CPU, another number of cores; on either, another allocator setting, other XLA_FLAGS or
    OpenMP settings than this process's environment has."""
    here, gpus = cpu_model(), None
    setting = " ".join(filter(None, (run_setting(os.environ), openmp_setting(os.environ))))
    for path in Path(out).rglob("*.json"):
        if ".caches" in path.relative_to(out).parts:  # the compiler caches the runs share: no records
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or record.get("device") is None:
            continue  # not a run's record (env_cost.json, host_cost.json and its trace, handover.json, a failure record)
        model = (record.get("cpu") or {}).get("model")
        gpu = (record.get("gpu") or {}).get("name") if record["device"] != "cpu" else None
        if gpu:
            gpus = gpu_names() if gpus is None else gpus
            if gpu not in gpus:
                return f"{path.name} was timed on an {gpu}, and this machine has {', '.join(gpus) or 'no GPU'}"
            if other := other_versions(record.get("versions") or {}):
                return f"{path.name} was timed with {other}"
        elif model not in (None, here):
            return f"{path.name} was timed on {model}, and this machine is {here}"
        elif (cores := (record.get("cpu") or {}).get("cores")) not in (None, len(os.sched_getaffinity(0))):
            return f"{path.name} was timed on {cores} cores, and this sweep has {len(os.sched_getaffinity(0))}"
        openmp = (record.get("cpu") or {}).get("openmp")  # (records from before it was recorded: not compared)
        ours = setting if openmp is not None else run_setting(os.environ)
        if (theirs := " ".join(filter(None, (run_setting(settings_of(record)), openmp_setting(openmp or {}))))) != ours:
            return f"{path.name} was timed with {theirs or 'no setting'}, and this sweep has {ours or 'none'}"
    return ""
