"""How long a rollout of the gridworld takes in each stack as environments are added: the DQN post's scaling figure,
with the same work in every stack and intervals.

Each stack steps N copies of FourRooms-misc (four rooms joined by doorways) STEPS times, acting uniformly at random,
an episode reset on the step that ends it:
- gymnasium-sync: benchback/gridworld.py's NumPy FourRooms in Gymnasium's SyncVectorEnv (the copies stepped in turn,
  in one process), the actions drawn by NumPy;
- gymnasium-async: the same in Gymnasium's AsyncVectorEnv, a process per copy;
- jax-vmapped: gymnax's FourRooms-misc vmapped over the copies, one jitted step (actions drawn inside) per call from a
  Python loop;
- jax-scan: the same step in lax.scan, the whole rollout one compiled call.
Per N: every stack is built (its processes started, its programs compiled and one rollout run, untimed), then B blocks
each time one rollout of every stack, in an order rotated from block to block; then the processes are closed.
Per stack and N: the median rollout time with its 95% bootstrap interval over the blocks, the environment steps per
second, and the rollout time over jax-scan's in the same block (geometric mean over the blocks, with its interval). A
figure draws the rollout times against N. --quick: two counts, 2 blocks, 20 steps (the tests').

    python -m studies.gridworld_stacks --out results/studies/gridworld-stacks/rollout.json
"""

import argparse
import importlib.metadata
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.outputs import check_out, write_atomic
from bench.run_records import cpu_model
from report.timing import MIN_BLOCKS, geometric_ratio, median_with_interval

ENV_ID = "FourRooms-misc"
STACKS = ("gymnasium-sync", "gymnasium-async", "jax-vmapped", "jax-scan")
REFERENCE = "jax-scan"
COLORS = {"gymnasium-sync": "rosybrown", "gymnasium-async": "tab:brown", "jax-vmapped": "tab:cyan", "jax-scan": "tab:blue"}
COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)  # the post's went to 500
STEPS, BLOCKS = 200, 10
QUICK = dict(counts=(1, 4), steps=20, blocks=2)
LIBRARIES = ("gymnasium", "numpy", "jax", "jaxlib", "gymnax")  # the versions the result holds
DEFAULT_OUT = "benchmark_out/studies/gridworld_stacks.json"  # not the committed result: that one is named when made


# ---------------------------------------------------------------- the stacks: each a rollout() that returns when done
class Gymnasium:
    """gridworld.py's FourRooms in Gymnasium's SyncVectorEnv or AsyncVectorEnv, stepped from NumPy."""

    def __init__(self, num_envs: int, steps: int, asynchronous: bool, seed: int):
        from benchback import gymnasium_envs

        self.envs = gymnasium_envs.vector_env(ENV_ID, num_envs, asynchronous)
        self.envs.reset(seed=seed)
        self.rng, self.num_envs, self.steps = np.random.default_rng(seed), num_envs, steps

    def rollout(self) -> float:
        """STEPS steps of every copy; the rewards' sum (every step's outputs are NumPy arrays, on the host)."""
        total = 0.0
        for _ in range(self.steps):
            _, reward, *_ = self.envs.step(self.rng.integers(4, size=self.num_envs))
            total += reward.sum()
        return float(total)

    def close(self):
        self.envs.close()


class Jax:
    """gymnax's FourRooms-misc, vmapped: a jitted step per call from a Python loop, or the loop in lax.scan. The
    rewards are summed in the carry, alike in both: the loop dispatches the step alone."""

    def __init__(self, num_envs: int, steps: int, scanned: bool, seed: int):
        import jax
        import jax.numpy as jnp

        from benchback import gymnax_envs

        env, params = gymnax_envs.make(ENV_ID)

        def step(carry, _):
            state, key, total = carry
            key, action_key, step_key = jax.random.split(key, 3)
            action = jax.random.randint(action_key, (num_envs,), 0, 4)
            keys = jax.random.split(step_key, num_envs)
            _, state, reward, *_ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(keys, state, action, params)
            return (state, key, total + reward.sum()), None

        key, reset_key = jax.random.split(jax.random.key(seed))
        _, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)
        self.zero = jax.device_put(jnp.float32(0))  # each rollout's sum starts from it
        self.carry = (gymnax_envs.strongly_typed(state), key, self.zero)
        self.steps = steps
        if scanned:
            self.run = jax.jit(lambda carry: jax.lax.scan(step, carry, length=steps)[0])
        else:
            self.step = jax.jit(lambda carry: step(carry, None)[0])
            self.run = self.python_loop

    def python_loop(self, carry):
        for _ in range(self.steps):
            carry = self.step(carry)
        return carry

    def rollout(self) -> float:
        """STEPS steps of every copy; the rewards' sum, read back: the wait for the last step."""
        state, key, _ = self.carry
        self.carry = self.run((state, key, self.zero))
        return float(self.carry[2])

    def close(self):
        pass


def build(stack: str, num_envs: int, steps: int, seed: int):
    if stack.startswith("gymnasium"):
        return Gymnasium(num_envs, steps, stack == "gymnasium-async", seed)
    return Jax(num_envs, steps, stack == "jax-scan", seed)


# ---------------------------------------------------------------- the measurement and its summary
def measure(counts, steps: int, blocks: int, seed: int = 1) -> list:
    """Per count, the stacks built and warmed, then `blocks` rotated blocks of one timed rollout each: a row a rollout."""
    rows = []
    for num_envs in counts:
        started = time.perf_counter()
        stacks = {}
        for stack in STACKS:
            begun = time.perf_counter()
            stacks[stack] = build(stack, num_envs, steps, seed)
            stacks[stack].rollout()  # compiles JAX's programs; the processes' first messages
            rows.append(dict(kind="setup", stack=stack, num_envs=num_envs, seconds=time.perf_counter() - begun))
        for block in range(blocks):
            order = STACKS[block % len(STACKS) :] + STACKS[: block % len(STACKS)]
            for stack in order:
                begun = time.perf_counter()
                reward = stacks[stack].rollout()
                seconds = time.perf_counter() - begun
                rows.append(
                    dict(kind="rollout", stack=stack, num_envs=num_envs, block=block + 1, seconds=seconds, reward=reward)
                )
        for stack in stacks.values():
            stack.close()
        print(f"{num_envs} envs: {blocks} blocks in {time.perf_counter() - started:.1f} s", flush=True)
    return rows


def summary(rows: list, steps: int) -> dict:
    """Per stack and count: the rollout's median seconds with its interval, steps per second, and the ratio to
    jax-scan's rollout in the same block."""
    timed = [r for r in rows if r["kind"] == "rollout"]
    result = {}
    for stack in STACKS:
        result[stack] = []
        for num_envs in sorted({r["num_envs"] for r in timed}):
            seconds = {r["block"]: r["seconds"] for r in timed if (r["stack"], r["num_envs"]) == (stack, num_envs)}
            reference = {r["block"]: r["seconds"] for r in timed if (r["stack"], r["num_envs"]) == (REFERENCE, num_envs)}
            median, low, high = median_with_interval(list(seconds.values()))
            ratio, ratio_low, ratio_high = geometric_ratio([seconds[b] / reference[b] for b in seconds])
            enough = len(seconds) >= MIN_BLOCKS
            result[stack].append(
                {
                    "num_envs": num_envs,
                    "blocks": len(seconds),
                    "rollout_s": median,
                    "ci": [low, high] if enough else None,
                    "steps_per_s": num_envs * steps / median,
                    "over_jax_scan": ratio,
                    "over_jax_scan_ci": [ratio_low, ratio_high] if enough else None,
                }
            )
    return result


def figure(result: dict, path: str) -> None:
    """The rollout's time against the number of environments, a line per stack with its 95% interval."""
    from pathlib import Path

    import matplotlib.pyplot as plt

    from report import figures

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for stack, points in result["stacks"].items():
        n = [p["num_envs"] for p in points]
        ax.plot(n, [p["rollout_s"] for p in points], marker="o", color=COLORS[stack], label=stack)
        if all(p["ci"] for p in points):
            ax.fill_between(n, *zip(*(p["ci"] for p in points)), color=COLORS[stack], alpha=0.25, linewidth=0)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="environments stepped together", ylabel=f"seconds per rollout of {result['settings']['steps']} steps")
    shown = ", 95% interval" if result["settings"]["blocks"] >= MIN_BLOCKS else ""
    ax.set_title(f"{ENV_ID}, random actions: median of {result['settings']['blocks']} blocks{shown}", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figures.save(fig, Path(path).parent, Path(path).name)


def table(result: dict) -> str:
    """A markdown table: a row per count, per stack the rollout time and its ratio to jax-scan's."""
    stacks = list(result["stacks"])
    rows = ["| envs | " + " | ".join(f"{s} (s) | over {REFERENCE}" for s in stacks) + " |"]
    rows.append("|---" * (1 + 2 * len(stacks)) + "|")
    for i, point in enumerate(result["stacks"][REFERENCE]):
        cells = [str(point["num_envs"])]
        for stack in stacks:
            p = result["stacks"][stack][i]
            ci = p["over_jax_scan_ci"]
            cells += [f"{p['rollout_s']:.4f}", f"{p['over_jax_scan']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def positive_counts(text: str) -> tuple:
    counts = tuple(int(x) for x in text.split(","))
    if not counts or min(counts) < 1:
        raise ValueError
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", help=f"environment counts, comma-separated (default {','.join(map(str, COUNTS))})")
    parser.add_argument("--steps", type=int, help=f"steps of every env in a rollout (default {STEPS})")
    parser.add_argument("--blocks", type=int, help=f"timed rollouts of every stack per count (default {BLOCKS})")
    parser.add_argument("--quick", action="store_true", help="counts 1 and 4, 20 steps, 2 blocks (the tests')")
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"default {DEFAULT_OUT}; the figure beside it (.png)")
    a = parser.parse_args(argv)
    problems = []
    try:
        counts = positive_counts(a.counts) if a.counts else None
    except ValueError:
        problems.append(f"--counts {a.counts}: positive integers, comma-separated")
        counts = None
    for flag, value in (("--counts", a.counts), ("--steps", a.steps), ("--blocks", a.blocks)):
        problems += [f"{flag} {value}: --quick sets its own; give one or the other"] * (a.quick and value is not None)
    for flag, value in (("--steps", a.steps), ("--blocks", a.blocks)):
        problems += [f"{flag} {value}: at least 1"] * (value is not None and value < 1)
    if problems:
        print(f"error: {problems[0]}", file=sys.stderr)
        return 2
    check_out(a.out)
    settings = QUICK if a.quick else dict(counts=counts or COUNTS, steps=a.steps or STEPS, blocks=a.blocks or BLOCKS)
    rows = measure(settings["counts"], settings["steps"], settings["blocks"])
    result = {
        "cpu": cpu_model(),  # a study's timings hold only on the CPU model they were made on
        "cores": os.cpu_count(),
        "env_id": ENV_ID,
        "settings": {**settings, "counts": list(settings["counts"]), "quick": a.quick},
        "versions": {name: importlib.metadata.version(name) for name in LIBRARIES},
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "rows": rows,
    }
    result["stacks"] = summary(rows, settings["steps"])
    figure(result, os.path.splitext(a.out)[0] + ".png")
    write_atomic(a.out, json.dumps(result, indent=1) + "\n")
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
