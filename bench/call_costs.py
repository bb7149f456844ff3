"""bench/host_cost.py's per-call costs: what one call of each piece a torch rollout step or an update is made of costs
on the device, timed alone and back to back, with each policy step's aten ops and launches. Also acting, train()'s env
step with a given policy, which the floor's rollout steps with too."""

import dataclasses
import sys
import time

import numpy as np

from bench.load_script import load

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

    from benchback.torch_envs import GymnaxEnvs

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

    envs = GymnaxEnvs(env_id, num_envs, jax_device)
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
    hidden_sizes = torch_module.checks.parse_hidden(hidden)
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
