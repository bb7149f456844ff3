"""Time one jitted, vmapped gymnax `env.step` per environment: the env-complexity axis of plot.py.

    python env_cost.py --out DIR/env_cost.json --num-envs 32 CartPole-v1 Breakout-MinAtar

For each environment: reset `--num-envs` copies, compile `vmap(env.step)` under one `jax.jit`,
step it with random valid actions (warm-up calls first, then `--calls` timed calls, each ended by
`block_until_ready`) and keep the median, which ignores the odd slow call from a busy machine.
Environments already in the output file at the same num_envs are not measured again, so a
resumed sweep does not redo this. Unknown or unsupported environment ids exit with code 2.
"""

import argparse
import importlib.metadata
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

# jax and gymnax are imported where needed: when every cost is already measured (a resumed
# sweep), this script exits without paying their seconds of start-up.


def measure(env_id: str, num_envs: int, calls: int, warmup: int, seed: int = 0) -> dict:
    import gymnax
    import jax

    env, params = gymnax.make(env_id)
    space = env.action_space(params)
    key_reset, key_actions, key_steps = jax.random.split(jax.random.key(seed), 3)
    _, state = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))(jax.random.split(key_reset, num_envs), params)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    total = warmup + calls
    # Actions and keys are drawn before timing, so only the step itself is timed.
    actions = jax.random.randint(key_actions, (total, num_envs), 0, space.n)
    keys = jax.random.split(key_steps, (total, num_envs))
    durations = []
    for i in range(total):
        key, action = keys[i], actions[i]
        t0 = time.perf_counter()
        _, state, *_ = jax.block_until_ready(step(key, state, action, params))
        durations.append(time.perf_counter() - t0)
    timed = np.array(durations[warmup:])
    return {
        "median_s": float(np.median(timed)),
        "p10_s": float(np.percentile(timed, 10)),
        "p90_s": float(np.percentile(timed, 90)),
        "calls": calls,
        "warmup": warmup,
    }


def check_env(env_id: str) -> None:
    import gymnax

    if env_id == "MNISTBandit-bsuite":
        raise ValueError("MNISTBandit-bsuite downloads MNIST when it is built; it is not supported")
    if env_id not in gymnax.registered_envs:
        raise ValueError(f"unknown env id {env_id!r}")
    env, params = gymnax.make(env_id)
    if not isinstance(env.action_space(params), gymnax.environments.spaces.Discrete):
        raise ValueError(f"{env_id} has continuous actions; only discrete-action environments are supported")


def write_json_atomic(path: str, record: dict) -> None:
    """Temporary file beside `path`, then rename: a killed run never leaves half a file."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f, indent=1)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env_ids", nargs="+", help="gymnax environment ids")
    parser.add_argument("--out", required=True, help="JSON file to create or extend")
    parser.add_argument("--num-envs", type=int, default=32, help="parallel environments (the training --num-envs)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per environment")
    parser.add_argument("--warmup", type=int, default=10, help="untimed calls after compilation")
    args = parser.parse_args(argv)
    record = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            record = json.load(f)
    if record.get("num_envs") != args.num_envs:  # costs at another num_envs are not comparable
        record = {}
    if all(env_id in record.get("envs", {}) for env_id in args.env_ids):
        return 0
    try:
        for env_id in args.env_ids:
            check_env(env_id)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    import jax

    device = jax.devices()[0]
    record.update({
        "num_envs": args.num_envs,
        "device": "cpu" if device.platform == "cpu" else device.device_kind,
        "host": {"cpu_count": os.cpu_count(), "machine": platform.machine(), "processor": platform.processor(),
                 "system": platform.system()},
        "versions": {"python": platform.python_version(), **{n: importlib.metadata.version(n) for n in ("jax", "jaxlib", "gymnax")}},
    })
    envs = record.setdefault("envs", {})
    for env_id in args.env_ids:
        if env_id not in envs:
            envs[env_id] = measure(env_id, args.num_envs, args.calls, args.warmup)
            print(f"env cost {env_id}: {envs[env_id]['median_s'] * 1e6:.1f} us per step of {args.num_envs} envs")
    write_json_atomic(args.out, record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
