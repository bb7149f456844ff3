"""Do N seeds trained at once learn as N runs of one seed do? A script's default config on CartPole-v1: seeds 1..N
in one run (--num-seeds N) against seeds 1..N each alone, compared as the learn preset compares variants
(report.learning: rliable's IQM and mean of the final returns, and the probability that a run at once beats a run
alone, each with its stratified-bootstrap interval; an interval containing 0.5 reads "learns like the reference").

    python -m studies.seeds_learn --num-seeds 16 --out results/studies/seeds-learn/seeds-learn.json
"""

import argparse
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.load_script import load
from bench.outputs import check_out, write_atomic
from bench.variants import scripts
from report.learning import learning_statistics
from studies.envs import env_problem


def main(argv=None) -> int:
    offered = [v.name for v in scripts() if v.num_seeds]
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variant", default="jax_linen", help=f"one of {', '.join(offered)}")
    parser.add_argument("--num-seeds", type=int, default=16)
    parser.add_argument("--env-id", default="CartPole-v1")
    parser.add_argument("--total-timesteps", type=int, help="default: the script's")
    parser.add_argument("--out", help="JSON file for the result")
    a = parser.parse_args(argv)
    if a.out:
        check_out(a.out)
    if a.variant not in offered or a.num_seeds < 3:
        print(f"error: --variant must be one of {', '.join(offered)} and --num-seeds at least 3", file=sys.stderr)
        return 2
    if problem := env_problem(a.env_id):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    module = load(f"ppo_{a.variant}.py", f"benchback_seeds_learn_{a.variant}")
    quiet = dict(env_id=a.env_id, tensorboard=False, quiet=True)
    if a.total_timesteps:
        quiet["total_timesteps"] = a.total_timesteps
    start = time.perf_counter()
    alone = [module.train(module.Args(seed=seed, **quiet))["final_return"] for seed in range(1, a.num_seeds + 1)]
    print(f"{a.num_seeds} runs of one seed: {time.perf_counter() - start:.0f} s", flush=True)
    start = time.perf_counter()
    at_once = module.train(module.Args(seed=1, num_seeds=a.num_seeds, **quiet))["final_return"]
    print(f"one run of {a.num_seeds} seeds: {time.perf_counter() - start:.0f} s", flush=True)
    names = {"alone": f"{a.variant}, one seed a run", "at_once": f"{a.variant}, --num-seeds {a.num_seeds}"}
    rows = learning_statistics({names["alone"]: alone, names["at_once"]: at_once}, reference=names["alone"], collapse=None)
    for row in rows:
        print(f"{row['variant']}: IQM {row['iqm']:.1f} [{row['iqm_ci_low']:.1f}, {row['iqm_ci_high']:.1f}]; {row['verdict']}")
    result = {
        "env_id": a.env_id,
        "seeds": list(range(1, a.num_seeds + 1)),
        "final_return": {"alone": alone, "at_once": at_once},
    }
    result["statistics"] = rows
    if a.out:
        write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
