"""What does a setting of the process's environment do to a variant's steady iteration, and to its multiple of Linen's?

Settings that every framework would get alike, each against the scripts' own (nothing set):
- never_spin: GOMP_SPINCOUNT=0. The torch scripts let torch's OpenMP threads spin about 30 us after each parallel op
  (GOMP_SPINCOUNT=3000, set unless the environment already sets it); with 0 every thread sleeps after each op and is
  woken for the next. The first learn sweeps ran with it.
- keep_memory: glibc's malloc told to keep the memory it frees (GLIBC_TUNABLES, bench/run_records.KEEP_MEMORY). By
  default glibc hands a large freed block (over mmap's threshold, which grows to at most 32 MiB) back to the kernel,
  which maps it afresh, page by page, when the next allocation takes it again: on the full Craftax this made the
  torch scripts' env steps dearer (studies/craftax_scan.py). Its two parts apart: keep_freed (no mmap, no trim) and
  one_arena (every thread allocating from one arena).
- xla_one_thread: XLA's CPU code told to run each operation on one thread (XLA_FLAGS=--xla_cpu_multi_thread_eigen=false)
  instead of splitting matrix products over Eigen's thread pool; one_thread adds OMP_NUM_THREADS=1, torch's
  counterpart, so that every framework's operations run on one thread each.
- one_core: the process may use only the first of the cores it was given (its CPU affinity, as `taskset -c` sets it):
  every thread of every framework shares one core.
- other_code: the variant scripts of another checkout (`--other-code DIR`), with the scripts' own environment: what a
  change to the scripts does to their speed (over scripts_own: the other checkout's time over this one's).
- warm_caches: the compiler caches a sweep's steady runs share (bench/compiler_caches.warm_compiler_caches): JAX's
  persistent compilation cache and Inductor's, filled before the first block by one untimed run of each variant, so
  that every timed run loads its programs instead of compiling them. Does a program loaded from the cache run as fast
  as one compiled afresh? Each run's wall time (the process, start-up included) is kept too: what the caches save.

Each block runs each variant under each setting, the order rotated from block to block, each run a process of its own
with empty compiler caches of its own (as benchmark.sh gives its compile experiment), but for warm_caches. Per block, a setting's ratio of the steady
iteration (median of iterations 1 to the end) over the scripts' own; with jax_linen among the variants, also each
other variant's multiple of Linen's iteration under the setting over that multiple under the scripts' own (does the
setting move the answer table's ratio?). Over the blocks the geometric mean with a 95% bootstrap interval
(report.timing's, as plot.py computes a ratio's). Each run's minor page faults (the whole process, start-up included)
are counted too: memory the kernel maps afresh shows there.

    python -m studies.run_settings --out results/studies/omp-spin/omp-spin.json
    python -m studies.run_settings --settings keep_freed,one_arena,keep_memory --variants jax_linen,torch \
        --env-id CartPole-v1 --out results/studies/glibc/parts-s.json
    python -m studies.run_settings --settings one_core --variants jax_linen,jax_nnx,jax_equinox,torch \
        --env-id Breakout-MinAtar --iterations 11 --blocks 5 --out results/studies/cores-threads/one-core-breakout-s.json
    python -m studies.run_settings --settings warm_caches --variants jax_linen,jax_nnx,jax_equinox,torch,torch_compile \
        --env-id CartPole-v1 --blocks 3 --out results/studies/warm-caches/cartpole-s.json
    python -m studies.run_settings --pool A.json,B.json --out pooled.json   # the blocks of two runs of a study as one
"""

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.compiler_caches import COMPILER_CACHE_VARIABLES, fresh_compiler_caches, warm_compiler_caches
from bench.outputs import check_out, write_atomic
from bench.presets import HIDDEN
from bench.run_records import KEEP_FREED, KEEP_MEMORY, ONE_ARENA, XLA_ONE_THREAD, cpu_model
from report.timing import REFERENCE, interval

# each setting -> the variables it sets in a run's environment; every run starts without any of them
OWN = "scripts_own"
SETTINGS = {
    OWN: {},
    "never_spin": {"GOMP_SPINCOUNT": "0"},
    "keep_memory": {"GLIBC_TUNABLES": KEEP_MEMORY},
    "keep_freed": {"GLIBC_TUNABLES": KEEP_FREED},  # keep_memory's two parts apart
    "one_arena": {"GLIBC_TUNABLES": ONE_ARENA},
    "xla_one_thread": {"XLA_FLAGS": XLA_ONE_THREAD},
    "one_thread": {"XLA_FLAGS": XLA_ONE_THREAD, "OMP_NUM_THREADS": "1"},
    "one_core": {},
    "warm_caches": {},  # the caches' variables: warm_compiler_caches, in the study's folder
    "other_code": {},  # the scripts of --other-code
}
WARM, OTHER = "warm_caches", "other_code"
CORES = {"one_core": 1}  # settings that narrow a run's CPU affinity to this many of the cores it was given
GLIBC_ONLY = {name for name, variables in SETTINGS.items() if "GLIBC_TUNABLES" in variables}
SETTING_VARIABLES = {name for variables in SETTINGS.values() for name in variables}
STEPS_PER_ITERATION = 32 * 256  # the scripts' default num_envs x num_steps


def run(variant: str, setting: str, seed: int, args, tmp: str) -> dict:
    """One run of ppo_{variant}.py under `setting`: the median of its iterations after iteration 0 ("steady_s"), the
    minor page faults and the wall seconds of its whole process, and what it found in the compiler caches."""
    run_dir = tempfile.mkdtemp(dir=tmp)
    unset = SETTING_VARIABLES | COMPILER_CACHE_VARIABLES
    env = {k: v for k, v in os.environ.items() if k not in unset} | SETTINGS[setting]
    warm = setting == WARM or args.caches == "warm"
    env |= warm_compiler_caches(os.path.join(tmp, WARM)) if warm else fresh_compiler_caches(run_dir)
    record = os.path.join(run_dir, "record.json")
    script = os.path.join(args.other_code if setting == OTHER else ROOT, f"ppo_{variant}.py")
    command = [sys.executable, script, "--env-id", args.env_id, "--seed", str(seed)]
    command += ["--hidden", HIDDEN[args.size], "--total-timesteps", str(args.iterations * STEPS_PER_ITERATION)]
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    if setting in CORES:  # taskset, not a preexec_fn: this process runs JAX's threads, and fork would copy their locks
        command = ["taskset", "-c", ",".join(map(str, sorted(os.sched_getaffinity(0))[: CORES[setting]])), *command]
    start = time.perf_counter()
    proc = subprocess.run([*command, "--quiet", "--no-tensorboard", "--json-out", record], env=env, capture_output=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        print(f"error: ppo_{variant}.py failed under {setting}:\n{proc.stderr.decode()[-3000:]}", file=sys.stderr)
        raise SystemExit(1)
    faults = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - faults
    with open(record) as f:
        made = json.load(f)
    return {
        "steady_s": statistics.median(made["iteration_durations"][1:]),
        "minor_faults": faults,
        "wall_s": wall,
        "caches": made.get("caches"),
    }


def missed(caches) -> bool:
    """Did a run given warm caches compile anything afresh (or not say)?"""
    return not caches or any(found.get("misses") for found in caches.values() if isinstance(found, dict))


def geometric_mean(ratios) -> dict:
    """The geometric mean of per-block ratios with its 95% bootstrap interval."""
    logs = np.log(np.asarray(ratios))
    low, high = interval(logs, np.mean)
    return {"ratio": float(np.exp(logs.mean())), "ci": [float(np.exp(low)), float(np.exp(high))]}


def ratios(seconds: dict) -> dict:
    """seconds[variant][setting]: the steady iterations of each block, OWN first among the settings. For each variant,
    each other setting's ratio over OWN; beside REFERENCE, also the variant's multiple of REFERENCE's time under the
    setting over that multiple under OWN. Each a geometric mean over the blocks with its interval."""
    result = {}
    for variant, times in seconds.items():
        t = {setting: np.array(block_times) for setting, block_times in times.items()}
        row = result[variant] = {"over_scripts_own": {s: geometric_mean(t[s] / t[OWN]) for s in t if s != OWN}}
        if REFERENCE in seconds and variant != REFERENCE:
            linen = {setting: np.array(block_times) for setting, block_times in seconds[REFERENCE].items()}
            row["multiple_of_linen"] = {s: geometric_mean(t[s] / linen[s]) for s in t}  # the answer's ratio, per setting
            row["multiple_of_linen_over_scripts_own"] = {
                s: geometric_mean((t[s] / linen[s]) / (t[OWN] / linen[OWN])) for s in t if s != OWN
            }
    return result


def problems(args, variants: list, settings: list):
    """Each thing wrong with the command line, found before any run."""
    from bench.env_cost import bad_env

    yield args.blocks < 2 and f"--blocks {args.blocks}: an interval needs at least 2"
    yield args.iterations < 2 and f"--iterations {args.iterations}: a steady iteration needs at least 2"
    yield args.size not in HIDDEN and f"--size {args.size}: sizes are {', '.join(HIDDEN)}"
    for v in variants:
        yield not os.path.exists(os.path.join(ROOT, f"ppo_{v}.py")) and f"--variants: no script ppo_{v}.py"
    yield len(set(settings)) < len(settings) and f"--settings {','.join(settings)}: a setting named twice"
    for s in settings:
        yield (s not in SETTINGS or s == OWN) and f"unknown setting '{s}'; settings: {', '.join(list(SETTINGS)[1:])}"
    cores = len(os.sched_getaffinity(0))
    for s in CORES.keys() & settings:
        yield cores <= CORES[s] and f"{s} needs more than {CORES[s]} core(s), and this process has {cores}"
        yield not shutil.which("taskset") and f"{s} needs taskset (util-linux) to narrow a run's cores"
    for s in GLIBC_ONLY.intersection(settings) if platform.libc_ver()[0] != "glibc" else ():
        yield f"{s} sets glibc's malloc tunables, and this Python does not run on glibc"
    yield bad_env([args.env_id])
    yield args.caches not in ("cold", "warm") and f"--caches {args.caches}: cold or warm"
    if OTHER in settings:
        yield not args.other_code and "other_code needs --other-code DIR, a checkout holding the variant scripts"
        for v in variants if args.other_code else ():
            there = os.path.join(args.other_code, f"ppo_{v}.py")
            yield not os.path.exists(there) and f"--other-code: no script {there}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--settings", default="never_spin", help="settings to compare with the scripts' own, comma-separated")
    parser.add_argument("--env-id", default="BernoulliBandit-misc")
    parser.add_argument("--variants", default="torch,torch_compile")
    parser.add_argument("--size", default="s", help="the model size: s, m or l (the sweep's)")
    parser.add_argument("--iterations", type=int, default=21, help="iterations a run (iteration 0 is not counted)")
    parser.add_argument("--blocks", type=int, default=4, help="blocks of runs (an interval needs 2)")
    parser.add_argument("--out", default="benchmark_out/studies/run_settings.json")  # a committed result names its --out
    parser.add_argument("--pool", help="run nothing: pool the blocks of these outputs (comma-separated) into --out")
    parser.add_argument("--other-code", help="other_code's checkout: the directory of the variant scripts it runs")
    parser.add_argument(
        "--caches", default="cold", help="cold: each run compiles (warm_caches aside); warm: every run loads the study's"
    )
    args = parser.parse_args()
    if args.pool:
        return pool(args.pool.split(","), args.out)
    variants, settings = args.variants.split(","), [OWN, *args.settings.split(",")]
    for problem in problems(args, variants, settings[1:]):
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            raise SystemExit(2)
    check_out(args.out)
    runs = {v: {s: [] for s in settings} for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        # the caches filled, as a sweep's first run of a cell fills them: not timed
        for setting in settings if args.caches == "warm" else [WARM] if WARM in settings else []:
            for variant in variants:
                run(variant, setting, args.blocks + 1, args, tmp)
        for block in range(args.blocks):
            order = settings[block % len(settings) :] + settings[: block % len(settings)]
            for variant in variants:
                for setting in order:
                    runs[variant][setting].append(run(variant, setting, block + 1, args, tmp))
                shown = {s: [round(r["steady_s"], 4) for r in made] for s, made in runs[variant].items()}
                print(f"block {block + 1}/{args.blocks}, {variant}: {shown}", flush=True)
    meta = {
        "cpu": cpu_model(),  # a study's timings hold only on the CPU model they were made on
        "env_id": args.env_id,
        "size": args.size,
        "iterations": args.iterations,
        "blocks": args.blocks,
        "settings": {s: SETTINGS[s] | ({"cores": CORES[s]} if s in CORES else {}) for s in settings},
        "caches": args.caches,
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
    }
    if OTHER in settings:  # which code the other checkout held
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=args.other_code, capture_output=True, text=True)
        meta["other_code"] = {"directory": args.other_code, "commit": commit.stdout.strip() or None}
    kept = {
        v: {key: {s: [r[key] for r in made] for s, made in row.items()} for key in ("steady_s", "minor_faults", "wall_s")}
        for v, row in runs.items()
    }
    for variant, row in runs.items():
        if WARM in settings:  # the blocks whose warm run compiled anyway, if any: its caches missed
            kept[variant]["warm_caches_missed"] = [i + 1 for i, r in enumerate(row[WARM]) if missed(r["caches"])]
    result = summary(meta, kept)
    write_atomic(args.out, json.dumps(result, indent=1) + "\n")
    show(result)


def summary(meta: dict, kept: dict) -> dict:
    """The study's output: `meta` (the CPU, env, size, ...) and per variant what each block measured under each setting
    (`kept`), with the ratios over the blocks."""
    result = {**meta, "variants": {}}
    for variant, row in ratios({v: row["steady_s"] for v, row in kept.items()}).items():
        result["variants"][variant] = {**kept[variant], **row}
    return result


def pool(paths: list, out: str) -> None:
    """The blocks of several outputs of one study (the same CPU model, env, size, iterations and settings) as one:
    their ratios over every block, written to `out`."""
    made = []
    for path in paths:
        try:
            with open(path) as f:
                made.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"error: --pool: cannot read {path} ({e})", file=sys.stderr)
            raise SystemExit(2) from None
    same = ("cpu", "env_id", "size", "iterations", "settings")
    for path, other in zip(paths[1:], made[1:]):
        if differs := [key for key in same if other.get(key) != made[0].get(key)]:
            print(f"error: --pool: {path} differs from {paths[0]} in {', '.join(differs)}", file=sys.stderr)
            raise SystemExit(2)
    check_out(out)
    variants = [v for v in made[0]["variants"] if all(v in m["variants"] for m in made)]
    kept, offset = {v: {} for v in variants}, 0
    for m in made:
        for v in variants:
            row = m["variants"][v]
            for key in ("steady_s", "minor_faults", "wall_s"):
                for s, values in row[key].items():
                    kept[v].setdefault(key, {}).setdefault(s, []).extend(values)
            if "warm_caches_missed" in row:
                kept[v].setdefault("warm_caches_missed", []).extend(i + offset for i in row["warm_caches_missed"])
        offset += m["blocks"]
    shared = {k: v for k, v in made[0].items() if k not in ("variants", "blocks") and all(m.get(k) == v for m in made)}
    result = summary({**shared, "blocks": offset, "pooled": paths}, kept)
    write_atomic(out, json.dumps(result, indent=1) + "\n")
    show(result)


def show(result: dict) -> None:
    """Each variant's ratio under each setting, one line each."""
    for variant, row in result["variants"].items():
        if multiples := row.get("multiple_of_linen"):
            shown = "; ".join(f"{s} {m['ratio']:.3f}x [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}]" for s, m in multiples.items())
            print(f"{variant}, its multiple of Linen's steady iteration: {shown}")
        for setting, r in row["over_scripts_own"].items():
            line = f"{variant}, {setting}: {r['ratio']:.3f}x [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}] the scripts' own steady iteration"
            if m := row.get("multiple_of_linen_over_scripts_own", {}).get(setting):
                line += f"; its multiple of Linen's {m['ratio']:.3f}x [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}] the one without it"
            if setting == WARM:
                wall = geometric_mean(np.array(row["wall_s"][WARM]) / np.array(row["wall_s"][OWN]))
                saved = statistics.median(np.array(row["wall_s"][OWN]) - np.array(row["wall_s"][WARM]))
                line += (
                    f"; a run's wall time {wall['ratio']:.2f}x [{wall['ci'][0]:.2f}, {wall['ci'][1]:.2f}], {saved:.1f} s saved"
                )
            print(line)


if __name__ == "__main__":
    main()
