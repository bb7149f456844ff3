"""Is the torch scripts' GAE by doubling also the faster one on this machine? Against CleanRL's loop over the steps.

The torch scripts solve GAE's backward recurrence in log2(num_steps) rounds of whole-tensor ops (few kernel
launches on a GPU). This times ppo_torch.py's compute_gae against the loop it replaced, on a rollout's shape
(num_steps x num_envs, random rewards, values and episode ends), in interleaved blocks whose order alternates;
per block the ratio doubling / loop, then the median and range over the blocks. It also reports the largest
difference between the two results (float32 rounding: the sums are grouped differently).

    python -m studies.gae_doubling --out results/studies/gae-doubling/gae-doubling.json
"""

import argparse
import json
import statistics
import sys
import time

import torch

from bench.load_script import load
from bench.outputs import check_out, write_atomic
from benchback.machine import cpu_info


def gae_loop(rewards, values, bootstrap_values, terminated, truncated, gamma, gae_lambda):
    """CleanRL's form, as the torch scripts had it: one step at a time, backwards."""
    deltas = rewards + gamma * bootstrap_values * (1.0 - terminated.float()) - values
    discounts = gamma * gae_lambda * (1.0 - (terminated | truncated).float())
    advantages = torch.empty_like(deltas)
    advantage = torch.zeros_like(deltas[0])
    for t in reversed(range(deltas.shape[0])):
        advantage = deltas[t] + discounts[t] * advantage
        advantages[t] = advantage
    return advantages, advantages + values


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-steps", type=int, default=256)
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--blocks", type=int, default=15, help="interleaved blocks")
    parser.add_argument("--calls", type=int, default=50, help="calls of each per block")
    parser.add_argument("--out", help="JSON file for the result")
    a = parser.parse_args(argv)
    if a.out:
        check_out(a.out)
    module = load("ppo_torch.py", "benchback_gae_torch")
    g = torch.Generator().manual_seed(0)
    shape = (a.num_steps, a.num_envs)
    trajectory = [torch.randn(shape, generator=g) for _ in range(3)]
    trajectory += [torch.rand(shape, generator=g) < 0.02, torch.rand(shape, generator=g) < 0.01]
    gae = {"doubling": module.compute_gae, "loop": gae_loop}
    difference = (gae["doubling"](*trajectory, 0.99, 0.95)[0] - gae["loop"](*trajectory, 0.99, 0.95)[0]).abs().max()
    ratios = []
    for block in range(a.blocks):
        seconds = {}
        for name in sorted(gae, reverse=block % 2 == 1):
            t0 = time.perf_counter()
            for _ in range(a.calls):
                gae[name](*trajectory, 0.99, 0.95)
            seconds[name] = (time.perf_counter() - t0) / a.calls
        ratios.append(seconds["doubling"] / seconds["loop"])
    result = {
        "shape": list(shape),
        "ratio_doubling_over_loop": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
        "blocks": a.blocks,
        "calls_per_block": a.calls,
        "largest_difference": float(difference),
        "cpu": cpu_info(),
        "torch": torch.__version__,
    }
    print(json.dumps(result, indent=1))
    if a.out:
        write_atomic(a.out, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
