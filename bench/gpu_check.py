"""The first command for a GPU owner: a preflight, then every variant for a few iterations with every check on.

    bash benchmark.sh --preset gpu-check      # or: python bench/gpu_check.py [--variants jax_linen,sac:torch,dqn:torch]

The preflight (bench/gpu_preflight.py) checks the NVIDIA driver against the CUDA builds of torch and jax, the C compiler
Triton needs, and that each framework really sees the GPU. Then each row runs in a process of its own, with the
environment a sweep gives a run (TORCH_COMPILE_FORCE_DISABLE_CACHES=1, fresh torch.compile and Triton cache directories,
JAX's memory settings as the script makes them): a variant's train() with --cuda, a PPO script's (ppo_*.py, its rows
named as its variant: jax_linen) on CartPole-v1, size s, 3 short iterations (SHORT), a SAC or TD3 script's (sac_*.py,
td3_*.py, its rows named sac:VARIANT, td3:VARIANT) on Pendulum-v1, hidden 64,64, 3 iterations of 2 steps after 194
random ones (SHORT_SAC), a DQN script's (dqn_*.py, dqn:VARIANT) on CartPole-v1, 3 iterations of 10 steps after 25 random
ones (SHORT_DQN), checked for
- devices: on the GPU in every framework it uses when a GPU is present, else on the CPU;
- compiles after 0: nothing compiles after iteration 0;
- host syncs: no host read in a timed iteration (jax's transfer guard, the traps of bench/sync_traps.py, and on a GPU
  the torch scripts' --sync-debug);
- sleep detector (GPU only): the waits those cannot see, found by timing (SleepDetector says how);
- race (GPU only): the same returns when a second process runs with CUDA_LAUNCH_BLOCKING=1, under which every kernel
  launch waits for the one before (CUDA's environment variable, JAX's launches included): no result may depend on the
  order of two streams, such as a DLPack hand-over's. An off-policy row's returns are mostly its random steps' (the
  one episode that ends does so in the last iteration): its learner's metrics, each iteration's as the script logs
  them (losses, Q values, SAC's alpha), must agree too, and an episode must have ended.
Rows more: each setting only a GPU runs (torch_compile+graphs and sac:, td3: and dqn:torch_compile+graphs,
with --cuda-graphs: the same returns, and off-policy the same metrics, as without, to float rounding, and no graph that torch.compile ran without CUDA
graphs: inductor's cudagraph_skips), and jax_linen on Asterix-MinAtar, whose step has a data-dependent lax.while_loop:
XLA's GPU runtime (its WhileThunk) copies the condition of a loop without a known trip count to the host and waits for
it, every trip. Does a check see it? That row's sleep detector reports "seen" or "not
seen" and fails nothing: the cost is XLA's, paid by every framework's env step alike (PPO's only: the MinAtar games have
discrete actions, SAC needs continuous ones). Exit code 1 if any check fails (preflight included), 2 on bad input.
"""

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent
if __name__ == "__main__" and not __package__:  # run as `python bench/gpu_check.py`: import bench.* from the root, not bench/
    sys.path[0] = str(ROOT)
from bench.compiler_caches import fresh_compiler_caches
from bench.gpu_preflight import SKIPPED, preflight
from bench.load_script import load
from bench.outputs import write_atomic
from bench.presets import HOST_WAITS_ON_GPU
from bench.sleep_detector import sleep_detector
from bench.sync_traps import HostSync, trapped_host_reads
from bench.variants import OFFPOLICY_ALGORITHMS, discover, scripts

DISCOVERED = discover()  # the ppo_*.py scripts and their settings (bench/variants.py)
# The off-policy algorithms, whose rows are named ALGORITHM:VARIANT (sac:jax_linen, td3:torch, dqn:jax_nnx): bench/variants.py names
# sac_jax_linen.py jax_linen, as ppo_jax_linen.py. Their scripts and settings:
OFFPOLICY = {algorithm: discover(algorithm=algorithm) for algorithm in OFFPOLICY_ALGORITHMS}
VARIANTS = {v.name: v for v in scripts(DISCOVERED)} | {
    f"{algorithm}:{v.name}": v for algorithm, found in OFFPOLICY.items() for v in scripts(found)
}
# Short but whole iterations: rollout, GAE, minibatch updates. Small: while the sleep detector holds the device back, an
# iteration's work must fit the device's queues (SleepDetector). ppo_torch.py's queues 9 JAX programs and at most 703
# kernels: the aten ops of one of its timed iterations, counted on the CPU (views among them, which launch none).
SHORT = dict(
    env_id="CartPole-v1",
    hidden="64,64",
    num_envs=32,
    num_steps=8,
    num_minibatches=2,
    update_epochs=1,
    total_timesteps=3 * 32 * 8,
    tensorboard=False,
    quiet=True,
)
# SAC's and TD3's: 194 random steps of 4 envs, then 3 iterations of 2 steps, each with a gradient step (the actor's every other
# one: policy_frequency 2, so every iteration updates alike, and iteration 0 calls each compiled function twice: with
# CUDA graphs, a warm-up and the recording). Pendulum-v1's episodes all last 200 steps: the first ends in the last
# iteration, so that there are returns to compare. For the queues, 2 steps: a timed iteration of sac_torch.py queues 2 JAX programs
# and at most 612 kernels (its aten ops but views, counted on the CPU). The buffer, 390 rows, wraps around.
SAC_RANDOM_STEPS = 194
SHORT_SAC = dict(
    env_id="Pendulum-v1",
    hidden="64,64",
    num_envs=4,
    steps_per_iteration=2,
    learning_starts=4 * SAC_RANDOM_STEPS,
    batch_size=32,
    buffer_size=390,
    total_timesteps=4 * SAC_RANDOM_STEPS + 3 * 4 * 2,
    tensorboard=False,
    quiet=True,
)
# DQN's (CleanRL's dqn.py on CartPole-v1, discrete actions): 25 random steps of 4 envs, then 3 iterations of 10 steps
# (one train_frequency), each with its gradient step, the target copied every other one; CartPole's short episodes
# end in them.
SHORT_DQN = dict(
    env_id="CartPole-v1",
    hidden="64,64",
    num_envs=4,
    steps_per_iteration=10,
    train_frequency=10,
    target_network_frequency=20,
    learning_starts=4 * 25,
    batch_size=32,
    buffer_size=390,
    total_timesteps=4 * 25 + 3 * 4 * 10,
    tensorboard=False,
    quiet=True,
)
SHORT_OFFPOLICY = {"sac": SHORT_SAC, "td3": SHORT_SAC, "dqn": SHORT_DQN}
COLUMNS = ["variant", "devices", "compiles after 0", "host syncs", "sleep detector", "race", "result"]
CHILD_TIMEOUT = 1800  # seconds: a compile of torch_compile on a slow machine, with room to spare
RTOL = 1e-4  # returns agree "to float rounding": a run's returns are sums of rewards over episode counts


class Row(NamedTuple):
    name: str
    variant: str
    fields: dict  # Args fields it sets beyond SHORT
    gpu_only: bool = False
    same_returns_as: Optional[str] = None  # a row whose returns this one must repeat
    observes: Optional[str] = None  # a cost the sleep detector is there to see, not to fail: reported seen or not
    environment: tuple = ()  # a setting made by the environment: (NAME, VALUE), VALUE after NAME's own


def switches(flags: tuple) -> dict:
    """A setting's flags, on/off switches all, as Args fields: ("--cuda-graphs",) -> {"cuda_graphs": True}."""
    names = [flag.removeprefix("--").replace("-", "_") for flag in flags]
    return {name.removeprefix("no_"): not name.startswith("no_") for name in names}


# What an environment's row of HOST_WAITS_ON_GPU is there to see: on a GPU, XLA's default runs a while loop's condition on
# the host.
WHILE_LOOP = "the host waits on each trip of the env step's lax.while_loop (XLA's WhileThunk), in every framework"
IN_COMMAND_BUFFERS = "whether XLA's command buffers for while loops take that wait off the host (not seen: they do)"


def setting_rows(discovered: list, prefix: str = "") -> list:
    """A row for each setting only a GPU runs, with its variant (prefix: an off-policy algorithm's rows'), whose returns
    it must repeat."""
    return [
        Row(prefix + v.name, prefix + v.setting_of, switches(v.flags), True, prefix + v.setting_of, environment=v.environment)
        for v in discovered
        if v.gpu_only
    ]


# Rows beyond one per variant, each run with its variant: the settings only a GPU runs (bench/variants.py: torch.compile
# with CUDA graphs, in PPO's scripts, SAC's and TD3's, XLA's command buffers for loops), which must repeat their script's
# returns, and the environments whose step waits for the host, with Linen's default and with its setting made by the
# environment.
EXTRAS = (
    setting_rows(DISCOVERED)
    + [row for algorithm, found in OFFPOLICY.items() for row in setting_rows(found, f"{algorithm}:")]
    + [Row(f"jax_linen@{env}", "jax_linen", {"env_id": env}, observes=WHILE_LOOP) for env in HOST_WAITS_ON_GPU]
    + [
        Row(f"{v.name}@{env}", "jax_linen", {"env_id": env}, True, observes=IN_COMMAND_BUFFERS, environment=v.environment)
        for v in DISCOVERED
        if v.setting_of == "jax_linen" and v.environment
        for env in HOST_WAITS_ON_GPU
    ]
)


def is_offpolicy(row: Row) -> bool:
    return row.variant.split(":", 1)[0] in OFFPOLICY


def rows_for(variants: list) -> list:
    return [row for v in variants for row in [Row(v, v, {}), *(e for e in EXTRAS if e.variant == v)]]


ROWS = {row.name: row for row in rows_for(list(VARIANTS))}


# ---------------------------------------------------------------- a row, in a process of its own
def run_one(row: Row, gpu: bool, plain: bool) -> dict:
    """One row, in this process: train() with every check on (plain: none, for the race check's second run)."""
    spec = VARIANTS[row.variant]
    is_torch = spec.framework == "torch"
    out, detector = {"error": None, "trapped": []}, {"verdict": SKIPPED}
    try:
        module = load(spec.script, f"benchback_{row.variant.replace(':', '_')}")
        debug = {"sync_debug": True} if is_torch and not plain else {}  # CUDA's own trap, on a GPU
        short = SHORT_OFFPOLICY[row.variant.split(":")[0]] if is_offpolicy(row) else SHORT
        args = module.Args(**{**short, **row.fields, "cuda": True, **debug})
        with contextlib.ExitStack() as checks:
            if is_offpolicy(row):  # in both runs: what returns_differ compares
                out["metrics"] = checks.enter_context(logged_metrics(module))
            if not plain:
                # Trapping torch's scalar reads would make dynamo trace around them: compiled variants go without it.
                scalar_reads = is_torch and not spec.compiles
                out["trapped"] = checks.enter_context(trapped_host_reads(torch_too=is_torch, scalar_reads=scalar_reads))
                detector = checks.enter_context(sleep_detector(module, spec, gpu))
            record = module.train(args)
        out["detector"] = detector["verdict"]
    except HostSync as e:
        out["error"] = f"FAIL: {e}"
        return out
    except Exception as e:  # a usage error (a framework without the GPU) or a crash: name it
        traceback.print_exc()
        out["error"] = f"FAIL: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        return out
    out.update({k: record[k] for k in ("devices", "compiles_after_first_iteration", "episodic_return", "final_return")})
    if getattr(args, "cuda_graphs", False):  # the graphs torch.compile ran without CUDA graphs, and said so only once in a log
        from torch._dynamo.utils import counters  # counted where inductor skips one (torch/_inductor/cudagraph_utils.py)

        out["cudagraph_skips"] = int(counters["inductor"]["cudagraph_skips"])
    return out


@contextlib.contextmanager
def logged_metrics(module):
    """Yields the list of the metrics the script logs, an iteration's after its timer (on the host), each {name: a
    float}: Log.iteration's, seen on their way."""
    import numpy as np

    log, logged = module.record.Log, []  # (benchback/record.py's, which the script imports)
    original = log.iteration

    def iteration(self, metrics):
        logged.append({name: float(np.mean(value)) for name, value in metrics.items()})
        return original(self, metrics)

    log.iteration = iteration
    try:
        yield logged
    finally:
        log.iteration = original


# ---------------------------------------------------------------- the verdicts and the table
def returns_differ(a: dict, b: dict) -> Optional[str]:
    """None if two runs' returns (each iteration's mean episodic return, and the final one) agree to RTOL, and so do
    their metrics, which SAC's rows log (logged_metrics) and PPO's do not: both runs or neither; else what differs."""

    def close(x, y):
        return x is None and y is None or None not in (x, y) and math.isclose(x, y, rel_tol=RTOL, abs_tol=1e-6)

    pairs = [*zip(a["episodic_return"], b["episodic_return"]), (a["final_return"], b["final_return"])]
    if len(a["episodic_return"]) != len(b["episodic_return"]) or not all(close(x, y) for x, y in pairs):
        return f"{a['episodic_return']} (final {a['final_return']}) vs {b['episodic_return']} (final {b['final_return']})"
    if ("metrics" in a) != ("metrics" in b):
        return f"metrics logged by one run only ({'the first' if 'metrics' in a else 'the second'})"
    if "metrics" not in a:
        return None
    if len(a["metrics"]) != len(b["metrics"]):
        return f"metrics of {len(a['metrics'])} iterations vs {len(b['metrics'])}"
    for i, (x, y) in enumerate(zip(a["metrics"], b["metrics"])):
        for name in sorted(x.keys() | y.keys()):
            if not close(x.get(name), y.get(name)):
                return f"iteration {i}'s {name}: {x.get(name)} vs {y.get(name)}"
    return None


def judge(row: Row, gpu: bool, run: dict, blocking: Optional[dict] = None, base: Optional[dict] = None) -> dict:
    """The row's cells from its run's result, the CUDA_LAUNCH_BLOCKING=1 run's (GPU only) and the run it must repeat."""
    cells = dict.fromkeys(COLUMNS, "-") | {"variant": row.name}
    if run["error"]:
        cells.update({"host syncs": "trapped" if run["trapped"] else "-", "result": run["error"]})
        return cells
    devices = run["devices"]
    on_gpu = all(not d.startswith(("cpu", "TFRT_CPU")) for d in devices.values())
    compiles = run["compiles_after_first_iteration"]
    cells.update({"devices": ", ".join(f"{k} {v}" for k, v in devices.items()), "compiles after 0": compiles})
    cells.update({"host syncs": len(run["trapped"]), "sleep detector": run["detector"], "race": SKIPPED})
    if row.observes and run["detector"].startswith(("FAIL", "ok")):
        seen = run["detector"].startswith("FAIL")
        cells["sleep detector"] = ("seen: " if seen else "not seen: ") + run["detector"].removeprefix("FAIL: ")
    if gpu and blocking:
        differ = returns_differ(run, blocking) if not blocking["error"] else f"its run failed: {blocking['error']}"
        cells["race"] = f"FAIL: under CUDA_LAUNCH_BLOCKING=1, {differ}" if differ else "ok"
    elif gpu:  # a row whose returns must repeat another's: that one's twin stands for it
        cells["race"] = f"skipped: its returns are compared with {row.same_returns_as}'s"
    problems = [
        ("on the CPU though a GPU is present" if gpu else "on a GPU no framework reported") if on_gpu != gpu else None,
        "compiled after iteration 0" if compiles else None,
        f"host syncs in a timed iteration, the first: {run['trapped'][0]}" if run["trapped"] else None,
        "sleep detector" if cells["sleep detector"].startswith("FAIL") and not row.observes else None,
        "race" if cells["race"].startswith("FAIL") else None,
        # SHORT_SAC ends an episode in the last iteration (SHORT_DQN several): else the race check would compare none
        "no episode ended in its iterations" if is_offpolicy(row) and run["final_return"] is None else None,
        f"{run['cudagraph_skips']} of its graphs ran without CUDA graphs" if run.get("cudagraph_skips") else None,
    ]
    if row.same_returns_as:
        differ = returns_differ(run, base) if base and not base["error"] else "no run to compare with"
        problems.append(f"returns differ from {row.same_returns_as}'s: {differ}" if differ else None)
    problems = [p for p in problems if p]
    cells["result"] = "FAIL: " + "; ".join(problems) if problems else "ok"
    return cells


def run_child(row: Row, gpu: bool, plain: bool = False, env: Optional[dict] = None) -> dict:
    """run_one in a fresh process, in a fresh temporary directory that holds its caches and its result."""
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        child_env = {**os.environ, **fresh_compiler_caches(tmp), **(env or {})}
        if row.environment:  # as benchmark.sh's run_one gives a setting its environment
            name, value = row.environment
            child_env[name] = f"{child_env[name]} {value}" if child_env.get(name) else value
        result = os.path.join(tmp, "result.json")
        command = [sys.executable, __file__, "--one", row.name, "--json-result", result, "--expect", "gpu" if gpu else "cpu"]
        try:  # the child's output goes to stderr: stdout holds the tables
            proc = subprocess.run(command + ["--plain"] * plain, env=child_env, stdout=2, timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            return {"error": f"FAIL: no result after {CHILD_TIMEOUT} s", "trapped": []}
        if not os.path.exists(result):
            return {"error": f"FAIL: its process exited with code {proc.returncode}", "trapped": []}
        with open(result) as f:
            return json.load(f)


def check(row: Row, gpu: bool, done: dict) -> dict:
    """Run a row (and on a GPU its CUDA_LAUNCH_BLOCKING=1 twin); `done` holds the runs so far, by row."""
    if row.gpu_only and not gpu:
        skipped = dict.fromkeys(("sleep detector", "race", "result"), SKIPPED)
        return dict.fromkeys(COLUMNS, "-") | {"variant": row.name} | skipped
    print(f"gpu-check: {row.name} ...", flush=True)
    done[row.name] = run_child(row, gpu)
    blocking = None
    if gpu and not row.same_returns_as:  # CUDA graphs' capture and CUDA_LAUNCH_BLOCKING are not tried together
        print(f"gpu-check: {row.name} again, with CUDA_LAUNCH_BLOCKING=1 ...", flush=True)
        blocking = run_child(row, gpu, plain=True, env={"CUDA_LAUNCH_BLOCKING": "1"})
    cells = judge(row, gpu, done[row.name], blocking, done.get(row.same_returns_as))
    # Each row's verdict as soon as it is known: a check cut short (a lease's end, a timeout) keeps the rows it ran.
    print(f"gpu-check: {row.name}: " + "; ".join(f"{c}: {cells[c]}" for c in COLUMNS[1:]), flush=True)
    return cells


def check_all(rows: list, gpu: bool) -> list:
    """Every row's cells. On a GPU one process at a time: each JAX process takes 75% of its memory, and a row may need
    another's run. Without one, a process a core: gpu-check times nothing."""
    done = {}
    if gpu:
        return [check(row, gpu, done) for row in rows]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    with ThreadPoolExecutor(max_workers=cores or 1) as pool:
        return list(pool.map(lambda row: check(row, gpu, done), rows))


def table(header: list, rows: list) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(cell).replace("|", "/") for cell in row) + " |" for row in rows])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from " + ",".join(VARIANTS))
    for internal in ("--one", "--json-result", "--expect"):  # a row's own process (run_child)
        parser.add_argument(internal, help=argparse.SUPPRESS)
    parser.add_argument("--plain", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        write_atomic(args.json_result, json.dumps(run_one(ROWS[args.one], args.expect == "gpu", args.plain)))
        return 0
    variants = list(dict.fromkeys(v for v in args.variants.split(",") if v))
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        given = ", ".join(unknown) or "(none given)"
        print(f"error: unknown variant(s) {given}; valid: {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    checks, gpu = preflight()
    print(f"gpu-check: preflight ({'a GPU is present' if gpu else 'no GPU: every GPU-only check is skipped'})")
    print(table(["preflight", "result"], checks), flush=True)
    rows = check_all(rows_for(variants), gpu)
    print(table(COLUMNS, [[row[c] for c in COLUMNS] for row in rows]))
    for row in rows_for(variants):
        if row.observes:
            print(f"{row.name}: its sleep detector looks for a known cost, and fails nothing: {row.observes}")
    ran = [row for row in rows if row["result"] != SKIPPED]
    failed = [row["variant"] for row in ran if row["result"] != "ok"]
    bad = [item for item, result in checks if result.startswith("FAIL")]
    print(
        f"gpu-check: {len(ran) - len(failed)} of {len(ran)} variants pass"
        + (f"; failed: {', '.join(failed)}" if failed else "")
        + (f"; preflight failed: {', '.join(bad)}" if bad else "")
    )
    return 1 if failed or bad else 0


if __name__ == "__main__":
    sys.exit(main())
