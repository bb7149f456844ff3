"""Is Equinox's filtering free? ppo_jax_equinox.py with eqx.filter_jit against the same script with jax.jit.

On every call, eqx.filter_jit flattens its arguments, splits the arrays (traced) from everything else
(held static), and looks the compiled program up by the static part; jax.jit only flattens. Every leaf of
ppo_jax_equinox.py's runner is an array, so plain jax.jit compiles the same program from the same function
(Equinox's documentation: "you can also still use Equinox with normal jax.jit"). Two measurements, in one
process, the two settings alternating:

- steady: per round one training run with eqx.filter_jit, one with jax.jit, and one of ppo_jax_linen.py
  (the reference, plain jax.jit), in an order that rotates from round to round; a run's steady time is the
  median of its iterations 1.. . Per round the ratios jax.jit / filter_jit and Linen / Equinox, then the
  geometric mean over the rounds with plot.py's 95% bootstrap interval (BCa over the rounds).
- dispatch: the per-call cost alone. A jitted function that takes the script's runner and returns it
  (as the iteration does) with nothing to compute, called `calls` times, under filter_jit and under
  jax.jit, alternating `pairs` times; the per-call difference with a 95% bootstrap interval.

    python -m studies.equinox_filter_jit --out results/studies/equinox-filter-jit/equinox-filter-jit.json
"""

import contextlib
import dataclasses
import importlib.metadata
import inspect
import os
import statistics
import sys
import time

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import tyro

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
import ppo_jax_equinox
import ppo_jax_linen
from benchback.checks import parse_hidden
from benchback.gymnax_envs import EpisodeStats, make
from benchback.machine import run_quietly
from benchback.record import write_json_atomic
from report.timing import interval
from studies.envs import env_problem


@dataclasses.dataclass
class Options:
    env_id: str = "CartPole-v1"
    """the environment the runs train on"""
    hidden: str = "64,64"
    """hidden sizes of the networks"""
    iterations: int = 30
    """iterations per training run (the first, which compiles, is left out of its median)"""
    rounds: int = 12
    """rounds of the steady measurement: each runs the three settings once"""
    calls: int = 2000
    """calls per timing of the dispatch measurement"""
    pairs: int = 20
    """timings of each setting in the dispatch measurement, alternating"""
    out: str = ""
    """write the figures as JSON here"""


PLAIN_JITS = []  # the functions plain_jit compiled: proof that the replacement took effect


def plain_jit(fun):
    """jax.jit in place of eqx.filter_jit: the script's static arguments (tx, args) by name."""
    PLAIN_JITS.append(fun.__name__)
    return jax.jit(fun, static_argnames=[name for name in ("tx", "args") if name in inspect.signature(fun).parameters])


@contextlib.contextmanager
def filter_jit_replaced_by_jax_jit():
    """ppo_jax_equinox.py looks eqx.filter_jit up when train() builds its jitted functions."""
    original = eqx.filter_jit
    eqx.filter_jit = plain_jit
    try:
        yield
    finally:
        eqx.filter_jit = original


def steady(record) -> float:
    assert record["compiles_after_first_iteration"] == 0, "a run compiled after iteration 0: its times are not steady"
    return statistics.median(record["iteration_durations"][1:])


def run(setting: str, opts: Options) -> float:
    """One training run's steady seconds per iteration."""
    fields = dict(env_id=opts.env_id, hidden=opts.hidden, cuda=False, tensorboard=False, quiet=True)
    fields["total_timesteps"] = opts.iterations * ppo_jax_equinox.Args.num_envs * ppo_jax_equinox.Args.num_steps
    if setting == "linen":
        return steady(ppo_jax_linen.train(ppo_jax_linen.Args(**fields)))
    args = ppo_jax_equinox.Args(**fields)
    before = len(PLAIN_JITS)
    with filter_jit_replaced_by_jax_jit() if setting == "jax.jit" else contextlib.nullcontext():
        record = ppo_jax_equinox.train(args)
    assert (len(PLAIN_JITS) > before) == (setting == "jax.jit"), PLAIN_JITS
    return steady(record)


def the_runner(opts: Options):
    """The runner ppo_jax_equinox.train() builds: the same pytree, so the same flattening and filtering."""
    module = ppo_jax_equinox
    args = module.Args(env_id=opts.env_id, hidden=opts.hidden, cuda=False)
    hidden, device = module.check_args(args)
    env, env_params = make(args.env_id)
    key, init_key, reset_key = jax.random.split(jax.random.key(args.seed), 3)
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, args.num_envs), env_params)
    agent = module.Agent(int(np.prod(obs.shape[1:])), hidden, env.action_space(env_params).n, False, key=init_key)
    schedule = optax.linear_schedule(args.learning_rate, 0.0, 100)
    tx = optax.chain(optax.clip_by_global_norm(args.max_grad_norm), optax.adam(lambda c: schedule(c // 80), eps=1e-5))
    episode = EpisodeStats(jnp.zeros(args.num_envs), jnp.zeros(args.num_envs, jnp.int32))
    runner = module.Carry(
        agent, tx.init(eqx.filter(agent, eqx.is_array)), jnp.zeros((), jnp.int32), env_state, obs, episode, key
    )
    return jax.device_put(runner, device)


def no_work(runner):
    """What the iteration takes and returns, and nothing to compute: (runner, metrics)."""
    return runner._replace(step=runner.step + 1), {name: runner.step for name in ("episodes", "return_sum", "learning_rate")}


def per_call(jitted, runner, calls: int) -> float:
    t0 = time.perf_counter()
    for _ in range(calls):
        runner, metrics = jax.block_until_ready(jitted(runner))
    return (time.perf_counter() - t0) / calls


def ratio_row(a: str, b: str, times: dict, name: str) -> dict:
    """time(a) / time(b) per round: the geometric mean over the rounds, its 95% interval and the verdict it allows."""
    logs = np.log(np.array(times[a]) / np.array(times[b]))
    low, high = np.exp(interval(logs, np.mean))
    verdict = f"{name} slower" if low > 1 else f"{name} faster" if high < 1 else "no difference detected"
    return {
        "ratio": float(np.exp(logs.mean())),
        "ci_low": float(low),
        "ci_high": float(high),
        "n": len(logs),
        "verdict": verdict,
    }


def main(opts: Options):
    if problem := env_problem(opts.env_id, discrete_gymnax=True):
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    # dispatch: per-call seconds, filter_jit and jax.jit alternating (which goes first alternates too)
    runner = the_runner(opts)
    jitted = {"filter_jit": eqx.filter_jit(no_work), "jax.jit": jax.jit(no_work)}
    for f in jitted.values():
        per_call(f, runner, 10)  # compile and warm up
    dispatch = {name: [] for name in jitted}
    for i in range(opts.pairs):
        for name in list(jitted)[:: 1 if i % 2 == 0 else -1]:
            dispatch[name].append(per_call(jitted[name], runner, opts.calls))
    difference = np.array(dispatch["filter_jit"]) - np.array(dispatch["jax.jit"])
    diff_low, diff_high = interval(difference, np.mean)

    # steady: rotating order of the three settings, one run each per round
    settings = ["filter_jit", "jax.jit", "linen"]
    times = {s: [] for s in settings}
    for r in range(opts.rounds):
        for s in settings[r % 3 :] + settings[: r % 3]:
            times[s].append(run(s, opts))
        print(f"round {r + 1}/{opts.rounds}: " + ", ".join(f"{s} {times[s][-1]:.4f}s" for s in settings), flush=True)
    filter_cost, vs_linen = (
        ratio_row("filter_jit", "jax.jit", times, "filter_jit"),
        ratio_row("filter_jit", "linen", times, "Equinox"),
    )

    result = {
        "env_id": opts.env_id,
        "hidden": list(parse_hidden(opts.hidden)),
        "iterations": opts.iterations,
        "rounds": opts.rounds,
        "device": "cpu",
        "cpu_count": os.cpu_count(),
        "versions": {
            "python": sys.version.split()[0],
            **{n: importlib.metadata.version(n) for n in ("jax", "jaxlib", "equinox", "flax", "optax", "gymnax")},
        },
        "git_commit": run_quietly("git", "rev-parse", "HEAD"),
        "steady_s": times,
        "steady_filter_jit_over_jax_jit": filter_cost,
        "steady_equinox_over_linen": vs_linen,
        "dispatch_calls": opts.calls,
        "dispatch_s_per_call": dispatch,
        "dispatch_extra_s_per_call": {"mean": float(difference.mean()), "ci_low": diff_low, "ci_high": diff_high},
        "dispatch_extra_share_of_steady_iteration": float(difference.mean() / np.median(times["filter_jit"])),
    }
    fmt = lambda row: f"{row['ratio']:.4f} [{row['ci_low']:.4f}, {row['ci_high']:.4f}] ({row['verdict']})"
    us = lambda s: f"{1e6 * s:.1f} us"
    print(
        f"dispatch per call: filter_jit {us(np.median(dispatch['filter_jit']))}, jax.jit {us(np.median(dispatch['jax.jit']))}; "
        f"filter_jit's extra {us(difference.mean())} [{us(diff_low)}, {us(diff_high)}], "
        f"{result['dispatch_extra_share_of_steady_iteration']:.2%} of a steady iteration"
    )
    print(f"steady iteration, {opts.rounds} rounds: filter_jit / jax.jit {fmt(filter_cost)}; Equinox / Linen {fmt(vs_linen)}")
    if opts.out:
        write_json_atomic(opts.out, result)


if __name__ == "__main__":
    main(tyro.cli(Options))
