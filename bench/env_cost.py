"""Time a vmapped gymnax `env.step` per environment (Craftax's through benchback/craftax_gymnax.py, as the scripts step it): the
env-complexity axis of plot.py.

    python bench/env_cost.py --out DIR/env_cost.json --num-envs 32 CartPole-v1 Breakout-MinAtar

For each environment: reset `--num-envs` copies and compile one `jax.jit` program that makes
`--steps` steps of `vmap(env.step)` in a `lax.scan`, with random valid actions drawn beforehand.
Each call is ended by `block_until_ready`; the cost of a step is the call's time divided by
`--steps`, so the dispatch and the sync of a call are spread over many steps (on a GPU, one step of
a small env takes less time than launching it). After a warm-up call, `--calls` timed calls, or as
many as fit in a minute where they would take longer (at least 3: Craftax's take tens of seconds
each on 2 CPU cores); the median ignores the odd slow call from a busy machine.
Environments already in the output file at the same num_envs and steps are not measured again, so
a resumed sweep does not redo this. Unknown or unsupported environment ids exit with code 2.
"""

import argparse
import importlib.metadata
import json
import os
import platform
import sys
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as `python bench/env_cost.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.outputs import check_out, earlier_result, write_atomic

# jax and gymnax are imported where needed: when every cost is already measured (a resumed
# sweep), this script exits without paying their seconds of start-up.


def make(env_id: str):
    """The environment and its parameters, as the scripts make them (benchback/gymnax_envs.py)."""
    from benchback import gymnax_envs

    return gymnax_envs.make(env_id)


def measure(env_id: str, num_envs: int, steps: int, calls: int, seed: int = 0) -> dict:
    import jax

    env, params = make(env_id)
    key_reset, key_actions, key_steps = jax.random.split(jax.random.key(seed), 3)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(key_reset, num_envs), params)
    # Drawn before timing, so only the env steps are timed.
    space = env.action_space(params)
    if hasattr(space, "n"):  # discrete
        actions = jax.random.randint(key_actions, (steps, num_envs), 0, space.n)
    else:  # continuous: uniform within the bounds
        actions = jax.random.uniform(key_actions, (steps, num_envs, *space.shape), minval=space.low, maxval=space.high)
    keys = jax.random.split(key_steps, (steps, num_envs))

    @jax.jit
    def run(state, keys, actions):
        def one_step(state, key_and_action):
            key, action = key_and_action
            _, state, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(key, state, action, params)
            return state, None

        return jax.lax.scan(one_step, state, (keys, actions))[0]

    state = jax.block_until_ready(run(state, keys, actions))  # compiles, and warms up
    t0 = time.perf_counter()
    state = jax.block_until_ready(run(state, keys, actions))  # warm: how long a call takes
    calls = min(calls, max(3, int(60 / (time.perf_counter() - t0))))
    durations = []
    for _ in range(calls):
        t0 = time.perf_counter()
        state = jax.block_until_ready(run(state, keys, actions))
        durations.append((time.perf_counter() - t0) / steps)
    return {
        "median_s": float(np.median(durations)),
        "p10_s": float(np.percentile(durations, 10)),
        "p90_s": float(np.percentile(durations, 90)),
        "steps_per_call": steps,
        "calls": calls,
    }


def installed_version(name: str):
    """The package's version, or None where it is not installed (craftax: needed for Craftax's environments only)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def bad_env(env_ids) -> str:
    """Why the first of `env_ids` that the scripts cannot train (not a gymnax environment, nor a Craftax one their
    adapter takes) cannot be run, or ''. benchmark.sh checks --envs with it too."""
    import gymnax

    from benchback.craftax_gymnax import ENV_IDS as CRAFTAX

    known = [e for e in gymnax.registered_envs if e != "MNISTBandit-bsuite"]  # that one downloads MNIST when built
    for env_id in env_ids:
        if env_id in CRAFTAX:  # discrete actions, all of them
            if installed_version("craftax") is None:
                return f"{env_id} needs the craftax package, which is not installed (requirements.txt pins it)"
            continue
        if env_id not in known:
            return f"unknown environment '{env_id}'; ids: {', '.join([*known, *CRAFTAX])}"
    return ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env_ids", nargs="+", help="gymnax environment ids, or Craftax's symbolic ones")
    parser.add_argument("--out", required=True, help="JSON file to create or extend")
    parser.add_argument("--num-envs", type=int, default=32, help="parallel environments (the training --num-envs)")
    parser.add_argument("--steps", type=int, default=500, help="env steps per timed call (one lax.scan)")
    parser.add_argument("--calls", type=int, default=20, help="timed calls per environment")
    args = parser.parse_args(argv)
    for name in ("num_envs", "steps", "calls"):
        if getattr(args, name) <= 0:
            print(f"error: --{name.replace('_', '-')} must be positive; got {getattr(args, name)}", file=sys.stderr)
            return 2
    check_out(args.out)
    record = earlier_result(args.out)
    if (record.get("num_envs"), record.get("steps_per_call")) != (args.num_envs, args.steps) or not isinstance(
        record.get("envs", {}), dict
    ):
        record = {}  # costs measured otherwise are not comparable
    if all(env_id in record.get("envs", {}) for env_id in args.env_ids):
        return 0
    problem = bad_env(args.env_ids)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2

    import jax

    device = jax.devices()[0]
    record.update(
        {
            "num_envs": args.num_envs,
            "steps_per_call": args.steps,
            "device": "cpu" if device.platform == "cpu" else device.device_kind,
            "host": {
                "cpu_count": os.cpu_count(),
                "machine": platform.machine(),
                "processor": platform.processor(),
                "system": platform.system(),
            },
            "versions": {
                "python": platform.python_version(),
                **{n: installed_version(n) for n in ("jax", "jaxlib", "gymnax", "craftax")},
            },
        }
    )
    envs = record.setdefault("envs", {})
    for env_id in args.env_ids:
        if env_id not in envs:
            envs[env_id] = measure(env_id, args.num_envs, args.steps, args.calls)
            print(f"env cost {env_id}: {envs[env_id]['median_s'] * 1e6:.1f} us per step of {args.num_envs} envs")
    write_atomic(args.out, json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
