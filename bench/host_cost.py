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
call, a DLPack hand-over each way, the env step alone (ppo_torch.py's GymnaxEnvs.jax_step), the policy step eager
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
import dataclasses
import json
import os
import sys
import time

import numpy as np

if __name__ == "__main__" and not __package__:  # run as `python bench/host_cost.py`: import bench.* from the root, not bench/
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench.load_script import load
from bench.outputs import check_out, earlier_result, write_atomic

WARM_UP = 3  # calls before the timed ones: a compiled function compiles on its first, a CUDA graph records on its second
BLOCK = 50  # calls issued back to back before one wait; with --calls under 500, a tenth of them (ten blocks)
CONFIDENCE = 0.95
GPU_ONLY = "needs a GPU"
# The calls, in the order the table lists them: what each is.
CALLS = {
    "torch_op": "trivial torch op (x.add_(1), 8 floats)",
    "jax_jit_op": "trivial jitted JAX call (x + 1, 8 floats)",
    "dlpack_jax_to_torch": "DLPack hand-over JAX -> torch, one observation batch",
    "dlpack_torch_to_jax": "DLPack hand-over torch -> JAX, one observation batch",
    "env_step": "env step alone (GymnaxEnvs.jax_step)",
    "policy_eager": "policy step, eager (ppo_torch.py)",
    "policy_compiled": "policy step, torch.compile (ppo_torch_compile.py)",
    "policy_graphed": "policy step, torch.compile + CUDA graphs",
    "minibatch_torch": "minibatch step, torch eager (minibatch_step)",
    "minibatch_jax": "minibatch step, JAX jitted (ppo_jax_linen.py's update)",
    "rollout_step_fixed": "rollout() of one step, fixed action (the floor's)",
    "rollout_step_eager": "rollout() of one step, eager policy",
    "rollout_step_compiled": "rollout() of one step, compiled policy",
    "rollout_step_graphed": "rollout() of one step, graphed policy",
}


def acting(module, envs, act):
    """train()'s env_step, acting with `act`: act, then step every env; the runner after the step, and its Transition."""

    def env_step(runner):
        action, logprob = act(runner.obs)
        env_state, obs, output = envs.step(runner.env_state, action)
        return module.Carry(env_state, obs), module.Transition(runner.obs, action, logprob, *output)

    return env_step


def rollout_floor(module, env_id: str, num_envs: int, num_steps: int, iterations: int, devices) -> dict:
    """Seconds per rollout of `module`'s rollout() without a network, as its train() sets the rollout up."""
    import jax
    import torch

    device, jax_device = devices
    jax.config.update("jax_default_device", jax_device)  # as train() does: the reset on the run's device too
    envs = module.GymnaxEnvs(env_id, num_envs, jax_device)  # as train() makes and starts them
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


# ---------------------------------------------------------------- per-call costs
def median_interval(seconds) -> tuple:
    """The median and its distribution-free interval: the order statistics j and n+1-j (1-based) around it, j the
    CONFIDENCE-level quantile of Binomial(n, 1/2), the count of calls below the true median."""
    from scipy import stats

    x = np.sort(np.asarray(seconds))
    n = len(x)
    j = max(1, int(stats.binom.ppf((1 - CONFIDENCE) / 2, n, 0.5)))
    return float(np.median(x)), (float(x[j - 1]), float(x[n - j]))


def time_calls(call, wait, calls: int) -> dict:
    """`call` made WARM_UP times, then `calls` times each followed by `wait` on what it returned, timed one by one; and
    as many issued back to back in blocks, each block ended by one wait (host_us: a block's time over its calls, what
    the host spends a call where it does not wait, as in a rollout). The two alternate block by block, so that what
    else the machine does meanwhile falls on both alike. Medians over calls and over blocks, in microseconds."""
    for _ in range(WARM_UP):
        wait(call())
    block = max(1, min(BLOCK, calls // 10))
    seconds, per_block = [], []
    while len(seconds) < calls:
        for _ in range(min(block, calls - len(seconds))):
            t0 = time.perf_counter()
            wait(call())
            seconds.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(block):
            out = call()
        wait(out)
        per_block.append((time.perf_counter() - t0) / block)
    median, (low, high) = median_interval(seconds)
    host, (host_low, host_high) = median_interval(per_block)
    return {
        "median_us": median * 1e6,
        "ci_us": [low * 1e6, high * 1e6],
        "host_us": host * 1e6,
        "host_ci_us": [host_low * 1e6, host_high * 1e6],
        "calls": calls,
        "skipped": None,
    }


def skipped(reason: str) -> dict:
    return {"median_us": None, "ci_us": None, "host_us": None, "host_ci_us": None, "calls": 0, "skipped": reason}


def count_ops(fn) -> int:
    """The aten ops one call of `fn` dispatches (views included): what eager torch runs one by one from Python."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        ops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.ops += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.ops


# The CUDA runtime and driver calls that start work on the GPU, as torch's profiler names them
# (torch/profiler/_cupti_monitor_trace.py, _RUNTIME_FLOW_NAMES and _DRIVER_FLOW_NAMES): Triton's kernels go through
# the driver's, a CUDA graph's replay is one cudaGraphLaunch.
LAUNCHES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch", "cuLaunchKernel", "cuLaunchKernelEx"}


def count_launches(fn, device, calls: int = 10):
    """Per call of `fn` on a GPU: the launches the host makes (LAUNCHES) and the kernels and copies the device runs,
    from torch.profiler; None on the CPU, where nothing is launched."""
    import torch

    if device.type != "cuda":
        return None
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    try:
        with torch.profiler.profile(activities=activities) as prof:
            for _ in range(calls):
                fn()
            torch.cuda.synchronize(device)
        events = prof.key_averages()
    except RuntimeError as e:  # the counts only explain the timings: without them the probe still answers
        print(f"warning: no launch counts ({e})", file=sys.stderr)
        return None
    return {
        "launches": sum(e.count for e in events if e.key in LAUNCHES) / calls,
        "device_ops": sum(e.count for e in events if e.device_type == torch.autograd.DeviceType.CUDA) / calls,
    }


def measure_calls(torch_module, env_id: str, hidden: str, num_envs: int, num_steps: int, calls: int, devices) -> dict:
    """Every entry of CALLS timed (time_calls), and what the verdict reads beside them: the aten ops of one eager
    policy step and, on a GPU, the launches of each policy step."""
    import jax
    import jax.numpy as jnp
    import optax
    import torch

    device, jax_device = devices
    gpu = device.type == "cuda"
    compile_module = load("ppo_torch_compile.py", "benchback_host_cost_torch_compile")
    linen = load("ppo_jax_linen.py", "benchback_host_cost_jax_linen")
    jax.config.update("jax_default_device", jax_device)
    jax.config.update("jax_default_matmul_precision", "highest")  # as the scripts' default --matmul-precision sets it
    torch.set_float32_matmul_precision("highest")
    sync = lambda _: torch_module.synchronize(device)  # the torch scripts' one wait: for torch's and JAX's streams
    ready = jax.block_until_ready  # the JAX scripts' wait
    results = {}

    small = torch.zeros(8, device=device)
    results["torch_op"] = time_calls(lambda: small.add_(1), sync, calls)
    jax_small = jax.device_put(jnp.zeros(8), jax_device)
    add_one = jax.jit(lambda x: x + 1)
    results["jax_jit_op"] = time_calls(lambda: add_one(jax_small), ready, calls)

    envs = torch_module.GymnaxEnvs(env_id, num_envs, jax_device)
    num_actions = envs.num_actions
    runner = torch_module.Carry(*envs.reset(0))
    obs_jax = jax.device_put(jnp.zeros(runner.obs.shape, jnp.float32), jax_device)
    obs_torch = torch.zeros(runner.obs.shape, device=device)
    # Each way the consumer names its stream to the producer's __dlpack__: torch.from_dlpack passes torch's current
    # stream (torch/utils/dlpack.py, from_dlpack), jax.dlpack.from_dlpack the one JAX takes ready events on
    # (jax/_src/dlpack.py, get_stream_for_external_ready_events). torch's side records an event on its current stream
    # and makes JAX's wait for it, on the device (torch/_tensor.py, Tensor.__dlpack__); JAX's side is jaxlib's compiled
    # code (buffer_to_dlpack_managed_tensor), whose cost on the host is what these calls time.
    results["dlpack_jax_to_torch"] = time_calls(lambda: torch.from_dlpack(obs_jax), sync, calls)
    results["dlpack_torch_to_jax"] = time_calls(lambda: jax.dlpack.from_dlpack(obs_torch), ready, calls)

    action = jax.device_put(jnp.arange(num_envs, dtype=jnp.int32) % num_actions, jax_device)
    state = [runner.env_state]

    def step_env():
        state[0], obs, output = envs.jax_step(state[0], action)
        return obs, output

    results["env_step"] = time_calls(step_env, ready, calls)

    # The policies, each as its script builds it in train(): an Agent of the same initial parameters (torch's seed),
    # run under no_grad as collect() runs the rollout.
    hidden_sizes = torch_module.harness.parse_hidden(hidden)
    obs_dim = int(np.prod(runner.obs.shape[1:]))  # as train() sizes its Agent
    torch.manual_seed(1)
    agent = torch_module.Agent(obs_dim, hidden_sizes, num_actions, False).to(device)
    eager = lambda obs: torch_module.act(agent, obs)
    torch.manual_seed(1)
    compile_agent = compile_module.Agent(obs_dim, hidden_sizes, num_actions, False).to(device)
    torch._inductor.config.cpp_wrapper = device.type == "cpu"  # as ppo_torch_compile.py's train() sets it
    compiled = torch.compile(lambda obs: compile_module.act(compile_agent, obs), dynamic=False)
    graphed = None
    if gpu:  # ppo_torch_compile.py --cuda-graphs: mode reduce-overhead, and each output cloned out of the graph's memory
        replay = torch.compile(lambda obs: compile_module.act(compile_agent, obs), mode="reduce-overhead", dynamic=False)
        graphed = lambda obs: torch.utils._pytree.tree_map(torch.clone, replay(obs))
    policies = {"eager": eager, "compiled": compiled, "graphed": graphed}
    obs = runner.obs  # handed to torch by the envs, as each step's is
    launches = {}
    with torch.no_grad():
        policy_ops = count_ops(lambda: eager(obs))
        for name, policy in policies.items():
            if policy is None:
                results[f"policy_{name}"] = skipped(GPU_ONLY)
                continue
            results[f"policy_{name}"] = time_calls(lambda: policy(obs), sync, calls)
            launches[f"policy_{name}"] = count_launches(lambda: policy(obs), device)
        launches["torch_op"] = count_launches(lambda: small.add_(1), device)

        # The rollout with each policy, one step: the floor's fixed action, then each network. What they add to the
        # fixed action's step is what the policy costs inside a rollout, hand-overs waiting on it included.
        actions = torch.arange(num_envs, device=device) % num_actions
        fixed = lambda obs: (actions, torch.zeros(num_envs, device=device))
        for name, policy in {"fixed": fixed, **policies}.items():
            if policy is None:
                results[f"rollout_step_{name}"] = skipped(GPU_ONLY)
                continue
            rollout_state, env_step, kept = [runner], acting(torch_module, envs, policy), []

            def one_step():
                # The envs drop the previous rollout's hand-overs when this one stacks, which train() may (its
                # iteration has synchronized since); calls issued back to back keep them until the wait instead.
                kept.extend(envs.previous)
                rollout_state[0], traj = torch_module.rollout(rollout_state[0], env_step, envs, 1)
                return traj

            def wait(traj):
                sync(traj)
                kept.clear()

            results[f"rollout_step_{name}"] = time_calls(one_step, wait, calls)

    # One minibatch step each way, on a batch of the shape a rollout of num_envs x num_steps makes.
    torch_args = torch_module.Args(env_id=env_id, num_envs=num_envs, num_steps=num_steps, hidden=hidden)
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // torch_args.num_minibatches
    generator = np.random.default_rng(0)
    columns = {
        "obs": generator.standard_normal((batch_size, *runner.obs.shape[1:])).astype(np.float32),
        "action": generator.integers(0, num_actions, batch_size).astype(np.int32),
        "logprob": np.full(batch_size, -np.log(num_actions), np.float32),
        "value": generator.standard_normal(batch_size).astype(np.float32),
        "advantage": generator.standard_normal(batch_size).astype(np.float32),
        "returns": generator.standard_normal(batch_size).astype(np.float32),
    }
    batch = torch_module.Batch(**{k: torch.from_numpy(v).to(device) for k, v in columns.items()})
    batch = batch._replace(action=batch.action.long())  # as the rollout's torch.stack of sampled actions makes it
    lr = torch.tensor(torch_args.learning_rate, device=device)  # as train() makes its optimizer
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5, fused=True)
    perm = torch.randperm(batch_size, device=device)
    indices = [perm[start : start + minibatch_size] for start in range(0, batch_size, minibatch_size)]
    turn = [0]

    def torch_minibatch():
        turn[0] += 1
        return torch_module.minibatch_step(agent, optimizer, batch, indices[turn[0] % len(indices)], torch_args)

    results["minibatch_torch"] = time_calls(torch_minibatch, sync, calls)

    # Linen's update with one epoch of one minibatch: its scans of one trip, one minibatch_step, jitted as train()
    # jits update (update_jit), on a batch of one minibatch.
    linen_args = linen.Args(env_id=env_id, num_envs=num_envs, num_steps=num_steps, hidden=hidden)
    linen_args = dataclasses.replace(linen_args, num_minibatches=1, update_epochs=1)
    linen_agent = linen.Agent(hidden_sizes, num_actions, False)
    # as its train() chains them, at a constant rate (its schedule anneals once an iteration)
    tx = optax.chain(optax.clip_by_global_norm(linen_args.max_grad_norm), optax.adam(linen_args.learning_rate, eps=1e-5))
    key, init_key = jax.random.split(jax.random.key(1))
    mb = linen.Batch(**{k: v[:minibatch_size] for k, v in columns.items()})
    params = linen_agent.init(init_key, mb.obs)
    train_state = linen.TrainState.create(apply_fn=linen_agent.apply, params=params, tx=tx)
    linen_runner = jax.device_put(linen.Carry(train_state, None, None, None, key), jax_device)
    mb = jax.device_put(mb, jax_device)
    update_jit = jax.jit(linen.update, static_argnames=("agent", "args"))
    carried = [linen_runner]

    def jax_minibatch():
        carried[0], losses = update_jit(carried[0], mb, linen_agent, linen_args)
        return carried[0], losses

    results["minibatch_jax"] = time_calls(jax_minibatch, ready, calls)
    return {"calls": {name: results[name] for name in CALLS}, "policy_ops": policy_ops, "launches": launches}


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
    except module.harness.UsageError as e:
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
    record["cpu"], record["xla_flags"] = module.harness.cpu_info(), os.environ.get("XLA_FLAGS")  # as a run's record has them
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
