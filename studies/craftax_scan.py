"""Is a Craftax step slower inside a compiled `lax.scan` than jitted alone and called once per step, and why?

The Craftax sync runs (results/speed/craftax-sync) found torch's rollout faster than Linen's, and nearly all of it the env
steps and DLPack hand-overs: the torch scripts call one jitted JAX env step per rollout step, where the JAX scripts
step the same envs inside one compiled scan. This times the env steps alone, four ways, in one process, with
the scripts' own env step (ppo_jax_linen.py's env_step without its policy) and actions drawn beforehand (no network,
no torch):

- per_call: the env step jitted and called once per step from Python, as the torch scripts' rollout calls it;
- scan: the same step in one jitted `lax.scan` that stacks every step's outputs, as the JAX rollout does;
- scan_state_only: a scan that carries the state and keeps no outputs, as bench/env_cost.py times an env;
- per_call_donated: per_call with the carried state donated (`donate_argnums`), so XLA may update it in place.

Each way starts from the same reset state, so all four do the same steps. Interleaved blocks, the order rotated
from block to block; per block each way's seconds per step and each other way's ratio over per_call; over the blocks the
geometric mean with a 95% bootstrap interval (report.timing's, as plot.py computes a ratio's). Each way's minor
page faults and system CPU seconds per step are counted too: memory the kernel maps afresh shows there.

Each setting is a child process of its own (`--settings`, all three by default):
- all_cores: on every core this process may use;
- one_core: pinned to one (`taskset -c 0`); a scan slower with two cores but not with one would mean that XLA
  spreads the step over the cores when it is called alone and not inside the loop;
- keep_memory: every core, with glibc's malloc told to keep the memory it frees (GLIBC_TUNABLES: no mmap, no trim,
  one arena); by default glibc hands a large freed block (over mmap's threshold, which grows to at most 32 MiB) back
  to the kernel, which maps it afresh, page by page, when the next call allocates it again.

    python -m studies.craftax_scan --out results/studies/craftax-step/scan-classic.json
    python -m studies.craftax_scan --env-id Craftax-Symbolic-v1 --settings all_cores,keep_memory \
        --out results/studies/craftax-step/scan-full.json
"""

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
from bench.outputs import check_out, write_atomic
from bench.run_records import KEEP_MEMORY

WAYS = ("per_call", "scan", "scan_state_only", "per_call_donated")


def make_ways(env_id: str, num_envs: int, num_steps: int, seed: int) -> dict:
    """Each way as a function of nothing that makes the `num_steps` steps and returns once they are done."""
    import jax
    import jax.numpy as jnp

    from benchback.gymnax_envs import EpisodeStats, count_episodes, make, strongly_typed

    env, params = make(env_id)
    reset_key, action_key, step_key = jax.random.split(jax.random.key(seed), 3)
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)
    # strongly typed from the start, as the torch scripts make it: a jitted step would otherwise compile twice
    state = strongly_typed(state)
    start = (state, EpisodeStats(jnp.zeros(num_envs), jnp.zeros(num_envs, jnp.int32)))  # the envs' part of a carry
    actions = jax.random.randint(action_key, (num_steps, num_envs), 0, env.action_space(params).n)
    keys = jax.random.split(step_key, num_steps)
    per_step = [(keys[t], actions[t]) for t in range(num_steps)]  # sliced before any timing

    def step(carry, key_and_action):
        """Every env once, as the scripts' env step does it (gymnax resets finished ones): the carry, and the outputs a
        Transition keeps."""
        (state, episode), (key, action) = carry, key_and_action
        vmapped = jax.vmap(env.step, in_axes=(0, 0, 0, None))
        obs, state, reward, terminated, truncated, info = vmapped(jax.random.split(key, num_envs), state, action, params)
        episode, finished = count_episodes(episode, reward, jnp.logical_or(terminated, truncated))
        return (state, episode), (obs, action, reward, terminated, truncated, info["final_observation"], finished)

    step_once = jax.jit(step)
    step_donated = jax.jit(step, donate_argnums=0)  # the carry's buffers may hold the next carry
    scan = jax.jit(lambda carry, xs: jax.lax.scan(step, carry, xs))
    scan_state_only = jax.jit(lambda carry, xs: jax.lax.scan(lambda c, x: (step(c, x)[0], None), carry, xs)[0])

    def per_call(step_jitted):
        carry, outputs = jax.tree.map(jnp.copy, start), []  # a copy: a donated carry is gone after the call
        for xs in per_step:
            carry, out = step_jitted(carry, xs)
            outputs.append(out)  # kept, as a rollout keeps them
        return jax.block_until_ready((carry, outputs))

    return {
        "per_call": lambda: per_call(step_once),
        "per_call_donated": lambda: per_call(step_donated),
        "scan": lambda: jax.block_until_ready(scan(start, (keys, actions))),
        "scan_state_only": lambda: jax.block_until_ready(scan_state_only(start, (keys, actions))),
    }


def child(a) -> dict:
    """One process's measurements: each way's first call (compilation) and its seconds per step in every block."""
    from benchback.machine import cpu_info

    ways = make_ways(a.env_id, a.num_envs, a.num_steps, a.seed)
    first = {}
    for name, run in ways.items():
        t0 = time.perf_counter()
        run()
        first[name] = time.perf_counter() - t0
    seconds, faults, system = ({name: [] for name in ways} for _ in range(3))
    for block in range(a.blocks):
        for i in range(len(WAYS)):
            name = WAYS[(i + block) % len(WAYS)]  # rotated: no way always runs first
            before, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            ways[name]()
            seconds[name].append((time.perf_counter() - t0) / a.num_steps)
            after = resource.getrusage(resource.RUSAGE_SELF)
            faults[name].append((after.ru_minflt - before.ru_minflt) / a.num_steps)
            system[name].append((after.ru_stime - before.ru_stime) / a.num_steps)
    return {
        "cores": len(os.sched_getaffinity(0)),
        "cpu": cpu_info(),
        "glibc_tunables": os.environ.get("GLIBC_TUNABLES"),
        "first_call_s": first,
        "per_step_s": seconds,
        "minor_faults_per_step": faults,
        "system_s_per_step": system,
    }


def summary(measured: dict) -> dict:
    """Each way's median milliseconds, page faults and system milliseconds per step, and each other way's time over
    per_call's with its interval."""
    from report.timing import MIN_BLOCKS, interval, none_if_nan

    per_step = measured["per_step_s"]
    result = {
        "cores": measured["cores"],
        "glibc_tunables": measured["glibc_tunables"],
        "first_call_s": measured["first_call_s"],
        "ms_per_step": {name: 1e3 * float(np.median(s)) for name, s in per_step.items()},
        "minor_faults_per_step": {name: float(np.median(f)) for name, f in measured["minor_faults_per_step"].items()},
        "system_ms_per_step": {name: 1e3 * float(np.median(s)) for name, s in measured["system_s_per_step"].items()},
    }
    for name in WAYS[1:]:
        logs = np.log(np.array(per_step[name]) / np.array(per_step["per_call"]))
        low, high = np.exp(interval(logs, np.mean)) if len(logs) >= MIN_BLOCKS else (np.nan, np.nan)
        result[f"{name}_over_per_call"] = {
            "ratio": float(np.exp(logs.mean())),
            "ci_low": none_if_nan(low),
            "ci_high": none_if_nan(high),
            "blocks": len(logs),
        }
    return result


# each setting, and what it needs
SETTINGS = {
    "all_cores": "",
    "one_core": "needs taskset and more than one core",
    "keep_memory": "needs glibc, whose tunables it sets",
}


def setting_commands(a) -> dict:
    """Each setting of --settings -> (its child's command, environment), or None where it cannot run here."""
    own = [sys.executable, "-m", "studies.craftax_scan", "--child", "--env-id", a.env_id, "--seed", str(a.seed)]
    own += ["--num-envs", str(a.num_envs), "--num-steps", str(a.num_steps), "--blocks", str(a.blocks)]
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    can_pin = len(os.sched_getaffinity(0)) > 1 and shutil.which("taskset")
    runnable = {
        "all_cores": (own, env),
        "one_core": (["taskset", "-c", str(min(os.sched_getaffinity(0))), *own], env) if can_pin else None,
        "keep_memory": (own, {**env, "GLIBC_TUNABLES": KEEP_MEMORY}) if platform.libc_ver()[0] == "glibc" else None,
    }
    return {name: runnable.get(name, ()) for name in a.settings.split(",")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--env-id", default="Craftax-Classic-Symbolic-v1", help="an environment the scripts train")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="child processes to run, comma-separated")
    parser.add_argument("--num-envs", type=int, default=32, help="parallel environments (the sweep's)")
    parser.add_argument("--num-steps", type=int, default=128, help="steps per timed call of each way")
    parser.add_argument("--blocks", type=int, default=5, help="interleaved blocks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="JSON file for the result")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)  # one process's measurements
    a = parser.parse_args(argv)
    if a.out:
        check_out(a.out)
    for name in ("num_envs", "num_steps", "blocks"):
        if getattr(a, name) <= 0:
            print(f"error: --{name.replace('_', '-')} must be positive; got {getattr(a, name)}", file=sys.stderr)
            return 2
    if a.child:
        print(json.dumps(child(a)))
        return 0
    settings, problem = setting_commands(a), ""
    unknown = [name for name in settings if name not in SETTINGS]
    blocked = [name for name, command in settings.items() if command is None]
    if unknown:
        problem = f"unknown setting '{unknown[0]}'; settings: {', '.join(SETTINGS)}"
    elif blocked:
        problem = f"setting {blocked[0]} cannot run here: it {SETTINGS[blocked[0]]}"
    else:
        from bench.env_cost import bad_env

        problem = bad_env([a.env_id])
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    result = {"env_id": a.env_id, "num_envs": a.num_envs, "num_steps": a.num_steps, "blocks": a.blocks}
    for setting, (command, env) in settings.items():
        proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)  # the root: studies.* found
        if proc.returncode != 0:
            print(f"error: the {setting} measurement failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
            return 1
        measured = json.loads(proc.stdout.strip().splitlines()[-1])
        result.setdefault("cpu", measured["cpu"])
        result[setting] = summary(measured)
        print(f"{setting}: " + ", ".join(f"{k} {v:.1f} ms/step" for k, v in result[setting]["ms_per_step"].items()))
    print(json.dumps(result, indent=1))
    if a.out:
        write_atomic(a.out, json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
