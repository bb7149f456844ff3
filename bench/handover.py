"""The floor under the torch scripts' rollout: its JAX env steps and DLPack hand-overs, with no network.

    python bench/handover.py --out DIR/handover.json CartPole-v1 Breakout-MinAtar

ppo_torch.py's rollout steps the environments by one jitted JAX call per step and hands every action to JAX and
every observation back to torch through DLPack. That part of torch's rollout time is not PyTorch's: the JAX
scripts step inside one compiled scan. This tool runs ppo_torch.py's own `rollout` (the same calls, on the same
device and streams) with a policy that returns a fixed action, so what is timed is the environment, the hand-overs
and the rollout's stacking, no network (the critic runs after the rollout, in collect). benchmark.sh runs it (to
OUT/handover.json) where a torch script is in the sync experiment, and plot.py's rollout-vs-update section splits
each torch rollout into this floor and the rest, PyTorch's part (the network and GAE).

Per environment: one warm-up rollout (compiles the env step), then `--iterations` timed rollouts, each ended as
train() ends an iteration (synchronize); the median, 10th and 90th percentiles. Environments already in the output
file for the same num_envs, num_steps and device are kept, so a resumed sweep does not measure them again.
Unknown environment ids exit with code 2.
"""

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from load_script import check_out, earlier_result, load, write_atomic  # noqa: E402


def rollout_floor(module, env_id: str, num_envs: int, num_steps: int, iterations: int, devices) -> dict:
    """Seconds per rollout of `module`'s rollout() without a network, as its train() sets the rollout up."""
    import jax
    import torch

    args = module.Args(env_id=env_id, num_envs=num_envs, num_steps=num_steps)
    device, jax_device = devices
    env, env_params = module.make_env(env_id)
    jax.config.update("jax_default_device", jax_device)  # as train() does: the reset on the run's device too
    runner = module.start_envs(env, env_params, jax.random.key(0), num_envs, jax_device)  # as train() starts
    env_step = module.jit_env_step(env, env_params)
    num_actions = env.action_space(env_params).n
    actions = torch.arange(num_envs, device=device) % num_actions  # every action taken, none computed
    logprobs = torch.zeros(num_envs, device=device)
    act = lambda obs: (actions, logprobs)
    durations, handed_over = [], []
    for i in range(iterations + 1):  # the first compiles the env step: not timed
        t0 = time.perf_counter()
        runner, _ = module.rollout(runner, act, env_step, handed_over, args)
        module.synchronize(device)
        if i:
            durations.append(time.perf_counter() - t0)
        handed_over.clear()
    return {
        "median_s": float(np.median(durations)),
        "p10_s": float(np.percentile(durations, 10)),
        "p90_s": float(np.percentile(durations, 90)),
        "iterations": iterations,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env_ids", nargs="+", help="environment ids, as the scripts take them")
    parser.add_argument("--out", required=True, help="JSON file to create or extend")
    parser.add_argument("--num-envs", type=int, default=32, help="parallel environments (the training --num-envs)")
    parser.add_argument("--num-steps", type=int, default=256, help="steps per rollout (the training --num-steps)")
    parser.add_argument("--iterations", type=int, default=20, help="timed rollouts per environment")
    parser.add_argument("--no-cuda", dest="cuda", action="store_false", help="stay on the CPU when a GPU is visible")
    a = parser.parse_args(argv)
    for name in ("num_envs", "num_steps", "iterations"):
        if getattr(a, name) <= 0:
            print(f"error: --{name.replace('_', '-')} must be positive; got {getattr(a, name)}", file=sys.stderr)
            return 2
    check_out(a.out)
    module = load("ppo_torch.py", "benchback_handover_torch")
    import torch

    try:  # ppo_torch.py's own checks: each env id, then the devices
        for env_id in a.env_ids:
            module.check_args(module.Args(env_id=env_id, cuda=False))
        _, device, jax_device = module.check_args(module.Args(cuda=a.cuda))
    except module.UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    record = earlier_result(a.out)
    # the device as a run's record names it (its GPU, or "cpu"), so plot.py can tell the floor belongs to the runs
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    shape = {"num_envs": a.num_envs, "num_steps": a.num_steps, "device": where}
    if any(record.get(k) != v for k, v in shape.items()) or not isinstance(record.get("envs"), dict):
        record = {**shape, "envs": {}}  # measured otherwise: not comparable
    if all(env_id in record["envs"] for env_id in a.env_ids):
        return 0  # measured with the sweep's runs: kept as it is
    record["cpu"], record["xla_flags"] = module.cpu_info(), os.environ.get("XLA_FLAGS")  # as a run's record has them
    for env_id in a.env_ids:
        if env_id not in record["envs"]:
            floor = rollout_floor(module, env_id, a.num_envs, a.num_steps, a.iterations, (device, jax_device))
            record["envs"][env_id] = floor
            print(f"hand-over floor {env_id}: {floor['median_s'] * 1e3:.1f} ms per rollout of {a.num_steps} steps")
    write_atomic(a.out, json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
