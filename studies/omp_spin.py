"""What does never spinning cost the torch scripts? They let torch's OpenMP threads spin about 30 us after each parallel
op (GOMP_SPINCOUNT=3000, set unless the environment already sets it); an environment with GOMP_SPINCOUNT=0 overrides
that, and every thread then sleeps after each op and is woken for the next. The learn sweeps of docs/results.md were
run with GOMP_SPINCOUNT=0; this measures what that setting did to torch's and torch.compile's iterations.

Each block runs each torch script twice, with the scripts' own setting and with GOMP_SPINCOUNT=0, the order rotated
from block to block, each run a process of its own with empty compiler caches of its own (as benchmark.sh gives
them); per block the ratio of the steady iterations (median of iterations 1 to the end), over the blocks the
geometric mean with a 95% bootstrap interval (report.timing's, as plot.py computes a ratio's).

    python studies/omp_spin.py --out results/omp_spin.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]
from load_script import check_out, write_atomic  # noqa: E402
from report.timing import interval  # noqa: E402

SETTINGS = {"scripts_own": None, "never_spin": "0"}  # the value of GOMP_SPINCOUNT in the run's environment
STEPS_PER_ITERATION = 32 * 256  # the scripts' default num_envs x num_steps


def steady_seconds(variant: str, spin, seed: int, args, tmp: str) -> float:
    """One run of ppo_{variant}.py; the median of its iterations after iteration 0."""
    run_dir = tempfile.mkdtemp(dir=tmp)
    env = {k: v for k, v in os.environ.items() if k != "GOMP_SPINCOUNT"}
    env.update(TORCH_COMPILE_FORCE_DISABLE_CACHES="1", TORCHINDUCTOR_CACHE_DIR=os.path.join(run_dir, "inductor"))
    env["TRITON_CACHE_DIR"] = os.path.join(run_dir, "triton")
    if spin is not None:
        env["GOMP_SPINCOUNT"] = spin
    record = os.path.join(run_dir, "record.json")
    command = [sys.executable, os.path.join(ROOT, f"ppo_{variant}.py"), "--env-id", args.env_id, "--seed", str(seed)]
    command += ["--total-timesteps", str(args.iterations * STEPS_PER_ITERATION), "--quiet", "--no-tensorboard"]
    subprocess.run([*command, "--json-out", record], env=env, check=True, capture_output=True)
    with open(record) as f:
        return statistics.median(json.load(f)["iteration_durations"][1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env-id", default="BernoulliBandit-misc")
    parser.add_argument("--variants", default="torch,torch_compile")
    parser.add_argument("--iterations", type=int, default=21, help="iterations a run (iteration 0 is not counted)")
    parser.add_argument("--blocks", type=int, default=4, help="blocks of runs (an interval needs 2)")
    parser.add_argument("--out", default="results/omp_spin.json")
    args = parser.parse_args()
    variants = args.variants.split(",")
    for problem in (
        args.blocks < 2 and f"--blocks {args.blocks}: an interval needs at least 2",
        args.iterations < 2 and f"--iterations {args.iterations}: a steady iteration needs at least 2",
        *(f"--variants: no script ppo_{v}.py" for v in variants if not os.path.exists(os.path.join(ROOT, f"ppo_{v}.py"))),
    ):
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            raise SystemExit(2)
    check_out(args.out)
    result = {"env_id": args.env_id, "iterations": args.iterations, "blocks": args.blocks, "variants": {}}
    with tempfile.TemporaryDirectory() as tmp:
        seconds = {v: {s: [] for s in SETTINGS} for v in variants}
        for block in range(args.blocks):
            order = list(SETTINGS)[:: 1 if block % 2 == 0 else -1]
            for variant in variants:
                for setting in order:
                    seconds[variant][setting].append(steady_seconds(variant, SETTINGS[setting], block + 1, args, tmp))
                print(f"block {block + 1}/{args.blocks}, {variant}: {seconds[variant]}", flush=True)
    for variant, times in seconds.items():
        ratios = np.array(times["never_spin"]) / np.array(times["scripts_own"])
        low, high = interval(np.log(ratios), np.mean)
        result["variants"][variant] = {
            "steady_s": times,
            "ratio_never_spin_over_scripts_own": float(np.exp(np.log(ratios).mean())),
            "ci": [float(np.exp(low)), float(np.exp(high))],
        }
    write_atomic(args.out, json.dumps(result, indent=1) + "\n")
    for variant, row in result["variants"].items():
        print(
            f"{variant}: GOMP_SPINCOUNT=0 takes {row['ratio_never_spin_over_scripts_own']:.2f}x [{row['ci'][0]:.2f}, "
            f"{row['ci'][1]:.2f}] the scripts' own setting's steady iteration"
        )


if __name__ == "__main__":
    main()
