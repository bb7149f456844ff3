"""What the cpu sweep's Craftax-Classic runs (overall, size s) show beyond plot.py's ratios: how much of each
variant's iteration the environment takes, and whether PPO learns in these short runs, alike in every variant.

The environment's share: bench/env_cost.py's seconds for a step of the sweep's envs (a jitted scan of vmapped steps,
random actions), times the steps of an iteration, over each run's steady iteration (the median of iterations 1 to
the end); the median over a variant's runs, and their range.

Learning: each run's final_return (its record: the mean return of the episodes that ended in its last 10 iterations) minus
the random policy's mean episode return, per variant, with a 95% percentile-bootstrap interval over the runs and
the random episodes; an interval above 0 reads "learned". Then the variants compared as the learn preset compares
them (report.learning: rliable's IQM and the probability of improvement over jax_linen, with intervals).

    python -m studies.expensive_env results/speed/cpu/records --out results/speed/cpu/expensive-env.json
"""

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.outputs import check_out, write_atomic
from report.learning import learning_statistics

ENV_ID = "Craftax-Classic-Symbolic-v1"


def random_policy_returns(num_envs: int, num_steps: int, seed: int) -> np.ndarray:
    """The return of every episode that ends within `num_steps` steps of `num_envs` envs acting uniformly at random."""
    import jax
    import jax.numpy as jnp

    from benchback import craftax_gymnax

    env, params = craftax_gymnax.make(ENV_ID)
    num_actions = env.action_space(params).n

    @jax.jit
    def run(key):
        reset_key, key = jax.random.split(key)
        _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)

        def step(carry, key):
            state, returns = carry
            action_key, step_key = jax.random.split(key)
            action = jax.random.randint(action_key, (num_envs,), 0, num_actions)
            _, state, reward, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(step_key, num_envs), state, action, params
            )
            returns = returns + reward
            done = terminated | truncated
            return (state, jnp.where(done, 0.0, returns)), (returns, done)

        return jax.lax.scan(step, (state, jnp.zeros(num_envs)), jax.random.split(key, num_steps))[1]

    returns, done = jax.device_get(run(jax.random.key(seed)))
    return returns[done]


def craftax_runs(records: Path) -> dict:
    """{variant: [record of each of its Craftax runs at size s]} from the sweep's overall records."""
    runs = {}
    for path in sorted(records.glob(f"overall/*__{ENV_ID}__s__seed*.json")):
        record = json.loads(path.read_text())
        if record.get("status") == "ok":
            runs.setdefault(record["variant"], []).append(record)
    return runs


def env_share(runs: dict, env_cost: dict) -> dict:
    """{variant: the environment's share of its steady iteration: median and range over its runs}."""
    step = env_cost["envs"][ENV_ID]["median_s"]  # one vmapped step of env_cost["num_envs"] envs
    shares = {}
    for variant, records in runs.items():
        values = []
        for r in records:
            if r["args"]["num_envs"] != env_cost["num_envs"]:
                continue  # bench/env_cost.py timed another number of envs
            values.append(step * r["args"]["num_steps"] / float(np.median(r["iteration_durations"][1:])))
        if values:
            shares[variant] = {"runs": len(values), "median": float(np.median(values)), "min": min(values), "max": max(values)}
    return shares


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("records", type=Path, help="a sweep's records (its overall/ holds the Craftax runs)")
    parser.add_argument("--random-envs", type=int, default=32, help="envs of the random policy")
    parser.add_argument("--random-steps", type=int, default=2048, help="steps of each of them")
    parser.add_argument("--out", help="JSON file for the result")
    a = parser.parse_args(argv)
    if a.out:
        check_out(a.out)
    runs = craftax_runs(a.records)
    if not runs:
        print(f"error: no {ENV_ID} run at size s under {a.records / 'overall'}", file=sys.stderr)
        return 2
    if a.random_envs <= 0 or a.random_steps <= 0:
        print("error: --random-envs and --random-steps must be positive", file=sys.stderr)
        return 2
    cost_file = a.records / "env_cost.json"
    env_cost = json.loads(cost_file.read_text()) if cost_file.exists() else {}
    shares = env_share(runs, env_cost) if ENV_ID in env_cost.get("envs", {}) else {}
    for variant, share in shares.items():
        print(f"{variant}: the env is {share['median']:.0%} of a steady iteration ({share['min']:.0%}-{share['max']:.0%})")
    finals = {v: [r["final_return"] for r in records if r["final_return"] is not None] for v, records in runs.items()}
    random = random_policy_returns(a.random_envs, a.random_steps, seed=0)
    print(f"random policy: {len(random)} episodes, mean return {random.mean():.2f}")
    margins = {}
    for variant, runs in finals.items():
        runs = np.array(runs)
        low, high = stats.bootstrap(
            (runs, random), lambda x, y: np.mean(x) - np.mean(y), method="percentile", rng=np.random.default_rng(0)
        ).confidence_interval
        margins[variant] = {"runs": len(runs), "margin": float(runs.mean() - random.mean()), "low": low, "high": high}
        print(
            f"{variant}: final return {runs.mean():.2f}, above random by {margins[variant]['margin']:.2f} [{low:.2f}, {high:.2f}]"
        )
    rows = learning_statistics(finals, collapse=None)
    for row in rows:
        print(f"{row['variant']}: IQM {row['iqm']:.2f} [{row['iqm_ci_low']:.2f}, {row['iqm_ci_high']:.2f}]; {row['verdict']}")
    result = {
        "env_id": ENV_ID,
        "env_share": shares,
        "final_return": finals,
        "random_policy": {
            "episodes": len(random),
            "mean_return": float(random.mean()),
            "envs": a.random_envs,
            "steps": a.random_steps,
        },
        "above_random": {v: {k: float(x) if k != "runs" else x for k, x in m.items()} for v, m in margins.items()},
        "statistics": rows,
    }
    if a.out:
        write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
