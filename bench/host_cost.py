"""The host's cost in the torch scripts' steps: the rollout's hand-over floor, each call's cost, one iteration traced.

    python bench/host_cost.py --out DIR/host_cost.json CartPole-v1 Breakout-MinAtar

The floor. ppo_torch.py's rollout steps the environments by one jitted JAX call per step and hands every action to
JAX and every observation back to torch through DLPack. That part of torch's rollout time is not PyTorch's: the JAX
scripts step inside one compiled scan. This tool runs ppo_torch.py's own `rollout` (the same calls, on the same
device and streams) with a policy that returns a fixed action, so what is timed is the environment, the hand-overs
and the rollout's stacking, no network (the critic runs after the rollout, in collect). benchmark.sh runs it (to
OUT/host_cost.json) where a torch script is in the sync experiment, and plot.py's rollout-vs-update section splits
each torch rollout into this floor and the rest, PyTorch's part (the network and GAE). Per environment: one warm-up
rollout (compiles the env step), then `--iterations` timed rollouts, each ended as train() ends an iteration
(synchronize); the median, 10th and 90th percentiles.

The calls. What one call of each piece a rollout step or an update is made of costs on the device (the GPU where
torch and JAX see one, else the CPU), built from the scripts' own functions: a trivial torch op, a trivial jitted JAX
call, a DLPack hand-over each way, the env step alone (benchback/torch_envs.py's GymnaxEnvs.jax_step), the policy step eager
(ppo_torch.py), compiled and compiled with CUDA graphs (ppo_torch_compile.py's torch.compile settings; graphs on a GPU
only), one minibatch step each way (ppo_torch.py's minibatch_step; ppo_jax_linen.py's update over one minibatch,
jitted as its train() jits it), and ppo_torch.py's rollout of one step with each policy. Each is called `--calls`
times, each call followed by the wait the scripts use (torch.cuda.synchronize on a GPU, block_until_ready for JAX):
the median in microseconds with a 95% interval (order statistics); and the same calls issued back to back in blocks
ended by one wait (host_us: what the host spends a call where it does not wait, as in a rollout). On the environment
CartPole-v1 where it is among the ids, else the first; at --hidden (size s by default). From them, a verdict on why the
policy step costs what it does eager and compiled. Beside the record (NAME.trace.json for NAME.json), a
torch.profiler trace of one iteration of ppo_torch.py's train (the second of two, so nothing compiles in it; one epoch
of the update, so the file stays small). --no-calls measures the floors alone, as this tool did before it had its name.

What the output file holds for the same num_envs, num_steps and device is kept, so a resumed sweep does not measure
it again: each environment's floor, and the calls (for the same environment, hidden sizes and --calls). Bad input
(an unknown environment id, a number not positive, bad --hidden, an --out or a trace that cannot be written) exits with
code 2, writing nothing.
"""

import argparse
import contextlib
import json
import os
import sys
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as `python bench/host_cost.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.call_costs import CALLS, acting, measure_calls
from bench.load_script import load
from bench.outputs import check_out, earlier_result, write_atomic


def rollout_floor(module, env_id: str, num_envs: int, num_steps: int, iterations: int, devices) -> dict:
    """Seconds per rollout of `module`'s rollout() without a network, as its train() sets the rollout up."""
    import jax
    import torch

    from benchback.torch_envs import GymnaxEnvs

    device, jax_device = devices
    jax.config.update("jax_default_device", jax_device)  # as train() does: the reset on the run's device too
    envs = GymnaxEnvs(env_id, num_envs, jax_device)  # as train() makes and starts them
    runner = module.Carry(*envs.reset(0))
    actions = torch.arange(num_envs, device=device) % envs.num_actions  # every action taken, none computed
    logprobs = torch.zeros(num_envs, device=device)
    env_step = acting(module, envs, lambda obs: (actions, logprobs))
    durations = []
    for i in range(iterations + 1):  # the first compiles the env step: not timed
        t0 = time.perf_counter()
        runner, _ = module.rollout(runner, env_step, envs, num_steps)
        module.synchronize(device)  # as an iteration ends (the envs keep their hand-overs until the next rollout's end)
        if i:
            durations.append(time.perf_counter() - t0)
    return {
        "median_s": float(np.median(durations)),
        "p10_s": float(np.percentile(durations, 10)),
        "p90_s": float(np.percentile(durations, 90)),
        "iterations": iterations,
    }


# ---------------------------------------------------------------- the trace
def trace_path(out: str) -> str:
    """Where the trace goes: NAME.trace.json beside NAME.json."""
    return (out[: -len(".json")] if out.endswith(".json") else out) + ".trace.json"


def trace_iteration(env_id: str, hidden: str, num_envs: int, num_steps: int, device, path: str) -> None:
    """A torch.profiler trace (Chrome's JSON) of the second iteration of ppo_torch.py's train: the first compiles the
    env step. One epoch of the update, so the trace stays small; each minibatch step runs as in the others."""
    import torch

    module = load("ppo_torch.py", "benchback_host_cost_trace")  # a copy of its own: its synchronize is patched
    activities = [torch.profiler.ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)  # as write_atomic makes the record's
    temporary = os.path.join(directory, f".tmp-{os.getpid()}-{os.path.basename(path)}")
    args = module.Args(
        env_id=env_id,
        num_envs=num_envs,
        num_steps=num_steps,
        total_timesteps=2 * num_envs * num_steps,
        update_epochs=1,
        hidden=hidden,
        cuda=device.type == "cuda",
        tensorboard=False,
        quiet=True,
    )
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=1, repeat=1)  # iteration 0 warms, 1 is recorded
    done = lambda prof: prof.export_chrome_trace(temporary)
    try:
        with torch.profiler.profile(activities=activities, schedule=schedule, on_trace_ready=done) as prof:
            synchronize = module.synchronize
            # train() ends each iteration with synchronize(device): the profiler's step ends with it.
            module.synchronize = lambda device: (synchronize(device), prof.step())
            module.train(args)
        os.replace(temporary, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


# ---------------------------------------------------------------- the verdict
def verdict(measured: dict) -> str:
    """One paragraph, from the numbers alone: what a policy step costs eager and compiled, what its eager ops' dispatch
    predicts of that, what the compiled call costs as one call, whether the host or the device sets the pace, and what
    each policy adds to a step of the rollout; then the reason it comes to, chosen by those numbers."""
    calls, ops, launches = measured["calls"], measured["policy_ops"], measured.get("launches") or {}
    us = lambda name: calls[name]["median_us"]
    host = lambda name: calls[name]["host_us"]
    ran = lambda name: calls[name]["skipped"] is None
    eager, compiled = us("policy_eager"), us("policy_compiled")
    (e_low, e_high), (c_low, c_high) = calls["policy_eager"]["ci_us"], calls["policy_compiled"]["ci_us"]
    alike = c_low <= e_high and e_low <= c_high or abs(compiled / eager - 1) < 0.1  # overlapping or within 10%
    graphed = f", {us('policy_graphed'):.0f} us with CUDA graphs" if ran("policy_graphed") else ""
    text = [f"A policy step costs {eager:.0f} us eager and {compiled:.0f} us compiled{graphed}, each waited for."]
    dispatch = ops * host("torch_op")
    share = dispatch / host("policy_eager")
    text.append(
        f" Eager runs {ops} aten ops from Python; at a trivial op's {host('torch_op'):.1f} us of host time each, their"
        f" dispatch is {dispatch:.0f} us, {share:.0%} of the {host('policy_eager'):.0f} us the host spends on an eager"
        f" step. The compiled step is one call of {host('policy_compiled'):.0f} us of host time, as much as"
        f" {host('policy_compiled') / host('torch_op'):.0f} trivial ops."
    )
    counted = [
        (name, launches[f"policy_{name}"]) for name in ("eager", "compiled", "graphed") if launches.get(f"policy_{name}")
    ]
    if counted:
        text.append(
            " A step makes "
            + ", ".join(f"{c['launches']:.0f} launches for {c['device_ops']:.0f} device ops {name}" for name, c in counted)
            + "."
        )
    device_bound = host("policy_eager") < 0.5 * eager and host("policy_compiled") < 0.5 * compiled
    if device_bound:
        text.append(" Issued back to back, either costs the host less than half its waited-for time: the device's pace.")
    fixed = us("rollout_step_fixed")
    added = {
        name: us(f"rollout_step_{name}") - fixed for name in ("eager", "compiled", "graphed") if ran(f"rollout_step_{name}")
    }
    text.append(
        f" In ppo_torch.py's rollout a step with a fixed action costs {fixed:.0f} us (env step {us('env_step'):.0f} us,"
        f" hand-overs {us('dlpack_torch_to_jax'):.0f} us to JAX and {us('dlpack_jax_to_torch'):.0f} us back); the policy"
        " adds " + ", ".join(f"{v:.0f} us {k}" for k, v in added.items()) + "."
    )
    on_gpu = ran("policy_graphed")  # graphed runs on a GPU alone
    if on_gpu and host("rollout_step_fixed") > 0.9 * fixed:
        text.append(
            f" Issued back to back a step still costs the host {host('rollout_step_fixed'):.0f} us: the host's time is"
            " the step's time (its own work, or waits inside the step)."
        )
    if not alike and compiled < eager:
        text.append(f" So compiling saves {eager - compiled:.0f} us a step.")
    elif not alike:
        text.append(
            f" So compiling costs {compiled - eager:.0f} us a step: its one call costs the host more"
            f" ({host('policy_compiled'):.0f} us) than the eager step's {ops} ops ({host('policy_eager'):.0f} us)."
        )
    elif device_bound:
        text.append(" So they cost the same because both wait for the device, whose time compiling does not shorten.")
    elif share >= 0.5:
        text.append(
            f" So they cost the same because the eager step is its {ops} dispatches, and the compiled call's fixed cost"
            " (guards, the compiled wrapper, its launches) is as large as the dispatch it saves."
        )
    else:
        text.append(" So they cost the same because the step is its ops' work, not their dispatch, and compiling keeps it.")
    return "".join(text)


def table(measured: dict) -> str:
    rows = [f"{'call':<24}{'median us':>11}{'95% interval':>21}{'host us':>11}{'95% interval':>21}  what"]
    for name, what in CALLS.items():
        c = measured["calls"][name]
        if c["skipped"]:
            rows.append(f"{name:<24}{'skipped: ' + c['skipped']:>32}{'':>32}  {what}")
            continue
        interval, host_interval = (f"[{low:.1f}, {high:.1f}]" for low, high in (c["ci_us"], c["host_ci_us"]))
        rows.append(f"{name:<24}{c['median_us']:>11.1f}{interval:>21}{c['host_us']:>11.1f}{host_interval:>21}  {what}")
    return "\n".join(rows)


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("env_ids", nargs="+", help="environment ids, as the scripts take them")
    parser.add_argument("--out", required=True, help="JSON file to create or extend; the trace goes beside it")
    parser.add_argument("--num-envs", type=int, default=32, help="parallel environments (the training --num-envs)")
    parser.add_argument("--num-steps", type=int, default=256, help="steps per rollout (the training --num-steps)")
    parser.add_argument("--iterations", type=int, default=20, help="timed rollouts per environment (the floor)")
    parser.add_argument("--calls", type=int, default=1000, help="timed calls of each kind (the per-call costs)")
    parser.add_argument("--hidden", default="64,64", help="the policy's hidden sizes for the calls (size s)")
    parser.add_argument("--no-calls", dest="measure_calls", action="store_false", help="the floors alone")
    parser.add_argument("--no-cuda", dest="cuda", action="store_false", help="stay on the CPU when a GPU is visible")
    a = parser.parse_args(argv)
    for name in ("num_envs", "num_steps", "iterations", "calls"):
        if getattr(a, name) <= 0:
            print(f"error: --{name.replace('_', '-')} must be positive; got {getattr(a, name)}", file=sys.stderr)
            return 2
    check_out(a.out)
    if a.measure_calls:
        check_out(trace_path(a.out), "--out's trace")
    module = load("ppo_torch.py", "benchback_host_cost_torch")
    import torch

    try:  # ppo_torch.py's own checks: each env id, the hidden sizes and the batch's shape, then the devices
        for env_id in a.env_ids:
            module.check_args(
                module.Args(env_id=env_id, hidden=a.hidden, num_envs=a.num_envs, num_steps=a.num_steps, cuda=False)
            )
        _, device, jax_device = module.check_args(module.Args(cuda=a.cuda))
    except module.checks.UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    record = earlier_result(a.out)
    # the device as a run's record names it (its GPU, or "cpu"), so plot.py can tell the floor belongs to the runs
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    shape = {"num_envs": a.num_envs, "num_steps": a.num_steps, "device": where}
    if any(record.get(k) != v for k, v in shape.items()) or not isinstance(record.get("envs"), dict):
        record = {**shape, "envs": {}}  # measured otherwise: not comparable
    calls_env = "CartPole-v1" if "CartPole-v1" in a.env_ids else a.env_ids[0]
    setup = {"env_id": calls_env, "hidden": a.hidden, "calls": a.calls}
    earlier_setup = record.get("calls_setup") or {}
    kept = earlier_setup.get("env_id") in a.env_ids and {**earlier_setup, "env_id": calls_env} == setup
    calls_wanted = a.measure_calls and not (kept and isinstance(record.get("calls"), dict))
    if all(env_id in record["envs"] for env_id in a.env_ids) and not calls_wanted:
        return 0  # measured with the sweep's runs: kept as it is
    from benchback.machine import cpu_info

    record["cpu"], record["xla_flags"] = cpu_info(), os.environ.get("XLA_FLAGS")  # as a run's record has them
    for env_id in a.env_ids:
        if env_id not in record["envs"]:
            floor = rollout_floor(module, env_id, a.num_envs, a.num_steps, a.iterations, (device, jax_device))
            record["envs"][env_id] = floor
            print(f"hand-over floor {env_id}: {floor['median_s'] * 1e3:.1f} ms per rollout of {a.num_steps} steps")
    if calls_wanted:
        measured = measure_calls(module, calls_env, a.hidden, a.num_envs, a.num_steps, a.calls, (device, jax_device))
        measured["verdict"] = verdict(measured)
        trace_iteration(calls_env, a.hidden, a.num_envs, a.num_steps, device, trace_path(a.out))
        record.update(calls_setup=setup, **measured)
        print(f"per-call costs on {where}, {calls_env}, hidden {a.hidden}, {a.calls} calls each:")
        print(table(record))
        print(record["verdict"])
        print(f"trace of one ppo_torch.py iteration: {trace_path(a.out)}")
    write_atomic(a.out, json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
