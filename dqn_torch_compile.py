"""DQN on gymnax with PyTorch and torch.compile: the torch_compile DQN variant of benchback.

Read it beside dqn_torch.py: their diff is the compilation. torch.compile wraps the greedy action, the Q network's
update and the target's move, as LeanRL compiles its policy and updates. The replay buffer is preallocated tensors on
the torch device, indexed without reading anything back (rows drawn by torch.randint there). The environments stay in JAX, one
jitted, vmapped gymnax step per step, its outputs crossing by DLPack without a copy (torch_envs.GymnaxEnvs). The random
steps before learning_starts are timed apart.

    python dqn_torch_compile.py --env-id CartPole-v1 --total-timesteps 50000
"""

import copy
import dataclasses
import os
import sys
import time
from typing import Literal, NamedTuple, Optional, Sequence

# Read as jax and torch start (the harness, below, says why): memory on demand, and torch's threads' wait.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("GOMP_SPINCOUNT", "3000")

import jax
import numpy as np
import torch
import torch.nn as nn

from benchback import checks, cli, compiles, record, torch_envs


@dataclasses.dataclass(frozen=True)
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """the name of this experiment (part of the TensorBoard run name)"""
    seed: int = 1
    """seed of the environment, the network init and the action sampling"""
    cuda: bool = True
    """use the GPU when one is visible; the CPU otherwise"""
    env_id: str = "CartPole-v1"
    """the gymnax environment id, one with discrete actions"""
    total_timesteps: int = 500000
    """total environment steps: the random ones, then whole iterations of num_envs * steps_per_iteration"""
    learning_rate: float = 2.5e-4
    """the learning rate of the optimizer"""
    num_envs: int = 1
    """the number of parallel environments"""
    buffer_size: int = 10000
    """the replay memory buffer size (transitions)"""
    gamma: float = 0.99
    """the discount factor gamma"""
    tau: float = 1.0
    """the target network update rate (1: a copy)"""
    target_network_frequency: int = 500
    """the timesteps it takes to update the target network (steps of the envs; a multiple of train_frequency)"""
    batch_size: int = 128
    """the batch size of sample from the replay memory"""
    start_e: float = 1.0
    """the starting epsilon for exploration"""
    end_e: float = 0.05
    """the ending epsilon for exploration"""
    exploration_fraction: float = 0.5
    """the fraction of `total-timesteps` it takes from start-e to go end-e"""
    learning_starts: int = 10000
    """environment steps of random actions, without updates, before learning starts"""
    train_frequency: int = 10
    """the frequency of training: one gradient step every that many steps of the envs (all num_envs at once)"""
    hidden: str = "120,84"
    """hidden layer sizes of the Q network, comma-separated"""
    tensorboard: bool = True
    """write TensorBoard logs to runs/{run_name}"""
    # The benchmark's, not DQN's: how the run is set up, timed and recorded.
    steps_per_iteration: int = 1000
    """steps of the envs per timed iteration (each of num_envs envs steps this many times; a multiple of
    train_frequency), with their updates"""
    compile_mode: Literal["default", "max-autotune-no-cudagraphs"] = "default"
    """torch.compile mode, without CUDA graphs (--cuda-graphs adds them)"""
    cuda_graphs: bool = False
    """on a GPU, replay the greedy action, the update and the target's move as CUDA graphs, recorded in iteration 0"""
    env_backend: Literal["gymnax", "torch", "gymnasium", "gymnasium-async"] = "gymnax"
    """gymnax: JAX's, handed over by DLPack every step; torch: benchback/torch_ports.py, gymnax's dynamics in PyTorch;
    gymnasium: its vector envs on the CPU (gymnasium-async: a process per env). torch and gymnasium have CartPole-v1 and
    Acrobot-v1; gymnasium also FourRooms-misc (benchback/gridworld.py, in NumPy)."""
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    sync_debug: bool = False
    """on a GPU, make torch raise on any host sync inside a timed iteration (torch.cuda.set_sync_debug_mode)"""
    json_out: Optional[str] = None
    """write the result record (JSON, schema 2) to this path"""
    quiet: bool = False
    """print no progress line per iteration"""


# ---------------------------------------------------------------- network
class QNetwork(nn.Module):
    """One Q-value per action, from the flattened observation: ReLU layers in nn.Linear's default init, which CleanRL's
    DQN keeps (weights and biases uniform in +-1/sqrt(fan_in)), the distribution dqn_jax_linen.py draws from, so that
    both frameworks start equal."""

    def __init__(self, obs_dim: int, hidden: Sequence[int], num_actions: int):
        super().__init__()
        layers = []
        for size in hidden:
            layers += [nn.Linear(obs_dim, size), nn.ReLU()]
            obs_dim = size
        self.network = nn.Sequential(nn.Flatten(), *layers, nn.Linear(obs_dim, num_actions))

    def forward(self, obs):
        return self.network(obs)


# ---------------------------------------------------------------- replay buffer
class Transitions(NamedTuple):  # one env step's transition per row: a sampled batch, or the buffer's data
    obs: torch.Tensor
    action: torch.Tensor  # int64, as gather takes it
    reward: torch.Tensor
    next_obs: torch.Tensor  # the observation reached before any auto-reset: a truncation is bootstrapped from it
    terminated: torch.Tensor  # float: 1.0 where the episode terminated (not where it was truncated)


class ReplayBuffer:
    """Preallocated and circular, on the device: `data`'s next rows are pos, pos + 1, ...; its first `size` are full.
    pos and size live on the host, known without reading the device."""

    def __init__(self, capacity: int, obs_shape: tuple, num_envs: int, device: torch.device):
        zeros = lambda *shape, dtype=torch.float32: torch.zeros((capacity, *shape), dtype=dtype, device=device)
        self.data = Transitions(zeros(*obs_shape), zeros(dtype=torch.int64), zeros(), zeros(*obs_shape), zeros())
        self.capacity, self.pos, self.size = capacity, 0, 0
        self.offsets = torch.arange(num_envs, device=device)

    def store(self, transitions: Transitions):
        """Write one step of every env at pos, wrapping around to the oldest rows."""
        rows = (self.offsets + self.pos) % self.capacity
        for stored, x in zip(self.data, transitions):
            stored[rows] = x
        n = len(self.offsets)
        self.pos, self.size = (self.pos + n) % self.capacity, min(self.size + n, self.capacity)

    def sample(self, batch_size: int) -> Transitions:
        """batch_size rows drawn uniformly, with replacement, from the full ones."""
        rows = torch.randint(self.size, (batch_size,), device=self.offsets.device)
        return Transitions(*(stored[rows] for stored in self.data))


# ---------------------------------------------------------------- loss
def q_loss(q_network: QNetwork, batch: Transitions, target):
    """The mean squared error of the taken actions' Q-values to the target."""
    q_action = q_network(batch.obs).gather(1, batch.action[:, None]).squeeze(1)
    loss = ((q_action - target) ** 2).mean()
    return loss, dict(q_values=q_action.mean().detach(), td_loss=loss.detach())


# ---------------------------------------------------------------- update
def update_q(q_network: QNetwork, target_network: QNetwork, optimizer, batch: Transitions, args: Args) -> dict:
    """One Adam step toward the TD target: reward + gamma * the target network's best Q at the next state, cut by
    termination (no gradient through it)."""
    with torch.no_grad():
        target_max = target_network(batch.next_obs).max(-1).values
        td_target = batch.reward + args.gamma * target_max * (1 - batch.terminated)
    loss, info = q_loss(q_network, batch, td_target)
    loss.backward()
    optimizer.step()
    q_network.zero_grad()  # after the step: the next backward starts from none (dynamo skips optimizer.zero_grad())
    return info


def move_target(q_network: QNetwork, target_network: QNetwork, args: Args):
    """The target moves tau toward the Q network: CleanRL's tau * param + (1 - tau) * target, with tau 1 exactly the
    parameters."""
    with torch.no_grad():
        for target, param in zip(target_network.parameters(), q_network.parameters()):
            target.copy_(args.tau * param + (1.0 - args.tau) * target)


def update(q_step, target_step, batch: Transitions, grad_step: int, args: Args):
    """One gradient step; then, every target_network_frequency steps of the envs, the target's move. Its losses.
    q_step and target_step: the compiled update and move."""
    info = q_step(batch)
    if grad_step % (args.target_network_frequency // args.train_frequency) == 0:  # grad_step counts from 1
        target_step()
    return info


# ---------------------------------------------------------------- train
class Carry(NamedTuple):  # what one step hands the next: the envs' state, the observation to act on, the steps so far
    env_state: object
    obs: torch.Tensor
    step: int  # steps of the envs taken so far (each of num_envs), what epsilon falls with: on the host


def epsilon(step: int, args: Args) -> float:
    """CleanRL's linear schedule: start_e to end_e over exploration_fraction of the run's steps, then end_e."""
    duration = args.exploration_fraction * args.total_timesteps / args.num_envs  # in steps of every env
    return max(args.start_e + (args.end_e - args.start_e) * step / duration, args.end_e)


def train(args: Args) -> dict:
    """Set up; the random steps; then one loop over the iterations, CleanRL's per step: act, step, store, and every
    train_frequency steps sample and update. Returns the record."""
    start = time.perf_counter()
    hidden, device, jax_device = check_args(args)  # (below) which also sets the matmul precision
    compiles.count_compiles(dynamo=True)  # from here on, each of XLA's and dynamo's compilations is counted
    torch._inductor.config.cpp_wrapper = device.type == "cpu"  # compiled code called from C++, not Python: less overhead
    # gymnax's, stepped in JAX and handed over by DLPack; or on --env-backend the torch ports or Gymnasium's
    envs = torch_envs.make(args.env_backend, args.env_id, args.num_envs, device, jax_device, args.seed, tally=True)
    random_steps = -(-args.learning_starts // args.num_envs)  # steps of every env, before learning starts
    num_iterations = (args.total_timesteps - random_steps * args.num_envs) // (args.num_envs * args.steps_per_iteration)
    grad_steps = num_iterations * (args.steps_per_iteration // args.train_frequency)

    env_state, obs = envs.reset(args.seed)
    carry = Carry(env_state, obs.float(), 0)  # MinAtar's observations are bool
    torch.manual_seed(args.seed)  # after the envs: their resets draw from a generator of their own
    obs_shape, num_actions = tuple(carry.obs.shape[1:]), envs.num_actions
    q_network = QNetwork(int(np.prod(obs_shape)), hidden, num_actions).to(device)
    target_network = copy.deepcopy(q_network)  # the target starts as a copy
    # foreach Adam, which inductor compiles into the update (fused is opaque to dynamo); capturable for a tensor rate
    lr = torch.tensor(args.learning_rate, device=device)
    optimizer = torch.optim.Adam(q_network.parameters(), lr=lr, foreach=True, capturable=True)
    buffer = ReplayBuffer(args.buffer_size, obs_shape, args.num_envs, device)
    # torch.compile, as in LeanRL: whole functions (loss.backward() breaks the update in two graphs), fixed shapes; with
    # --cuda-graphs, replayed (below) with their outputs cloned. Epsilon's draws stay eager: dqn_torch.py's draws, and
    # epsilon a Python float that a compiled function would specialize on, recompiling every step.
    mode = compile_mode(args)  # (below)
    compiled = lambda fn: cuda_graphed(args, torch.compile(fn, mode=mode, dynamic=False))
    greedy_action = compiled(lambda obs: q_network(obs).argmax(-1))
    q_step = compiled(lambda batch: update_q(q_network, target_network, optimizer, batch, args))
    # a function apart, called every target_network_frequency steps; the target it writes in place is parameters,
    # which CUDA graphs keep at static addresses
    target_step = compiled(lambda: move_target(q_network, target_network, args))
    kept = copy.deepcopy(target_network.state_dict())  # compiled now, not in the iteration that first moves the target
    target_step()
    target_network.load_state_dict(kept)  # in place: the same tensors, as CUDA graphs and dynamo's guards want

    def env_step(carry: Carry, random: bool) -> Carry:
        """Act (random: uniformly; otherwise each env epsilon-greedy on the Q network), step every env, store the
        transitions."""
        action = torch.randint(num_actions, (args.num_envs,), device=device)
        if not random:
            with torch.no_grad():
                greedy = greedy_action(carry.obs)
            explore = torch.rand(args.num_envs, device=device) < epsilon(carry.step, args)  # one draw per env
            action = torch.where(explore, action, greedy)
        env_state, obs, out = envs.step(carry.env_state, action)
        reward, terminated, final_obs = envs.to_torch(out.reward, out.terminated, out.final_obs)
        buffer.store(Transitions(carry.obs, action, reward, final_obs.float(), terminated.float()))
        return Carry(env_state, obs.float(), carry.step + 1)

    random_start = time.perf_counter()
    for _ in range(random_steps):  # learning_starts steps of random actions, stored, without updates
        carry = env_step(carry, random=True)
    synchronize(device)
    random_duration = time.perf_counter() - random_start
    env_state, random_ended = envs.tally(carry.env_state)  # their episodes are not the iterations'
    carry = carry._replace(env_state=env_state)

    devices = {"torch": device, "jax": jax_device}
    log = record.Log(args, VARIANT, devices, LIBRARIES, num_iterations, start, args.steps_per_iteration, grad_steps)
    grad_step, info = 0, {}  # what the log shows: the last gradient step's
    for iteration in range(num_iterations):
        with log.timed(no_syncs(args, device, iteration)):  # (below) nothing in it waits for the device but its end
            for _ in range(args.steps_per_iteration // args.train_frequency):
                for _ in range(args.train_frequency):
                    carry = env_step(carry, random=False)
                grad_step += 1
                info = update(q_step, target_step, buffer.sample(args.batch_size), grad_step, args)
            synchronize(device)  # (below) the iteration ends when the device is done
        env_state, ended = envs.tally(carry.env_state)
        carry = carry._replace(env_state=env_state)
        log.iteration(record.torch_fetched(info) | ended | dict(epsilon=epsilon(carry.step, args)))  # after the timer
    fields = record.random_steps_fields(args, random_steps, random_duration, num_iterations, random_ended, "dqn")
    return log.record(list(q_network.parameters()), rollout="python", extra=fields)


# ======================================================================================== benchmark harness
# Not DQN: what measures it. What every script does alike is in benchback/; here is PyTorch's own: its devices, what it waits for, its guards.
import contextlib
import logging

# The process settings at the top: JAX would take 75% of the GPU's memory at once, and torch shares the card. torch's
# OpenMP threads would busy-wait for milliseconds after each op, taking the cores JAX's env step needs; they spin ~30 us
# (GOMP_SPINCOUNT, GNU OpenMP's, overriding PASSIVE): enough to bridge an update's ops, where PASSIVE wakes per op.
VARIANT = cli.variant_of(__file__)
# What the tools will know of this script, read without running it (bench/variants.py).
TOOLING = {
    "framework": "torch",
    "compiles": "torch.compile",
    "order": 6,
    "color": "tab:pink",
    "gpu_setting": {"tag": "graphs", "flags": "--cuda-graphs", "color": "tab:olive"},
    "stacks": [
        {"tag": "torchenv", "flags": "--env-backend torch", "color": "deeppink"},
        {"tag": "gymnasium", "flags": "--env-backend gymnasium", "color": "plum"},
        {"tag": "gymnasium-async", "flags": "--env-backend gymnasium-async", "color": "darkmagenta"},
    ],
}
LIBRARIES = ("jax", "jaxlib", "flax", "optax", "gymnax", "numpy", "torch")  # the versions the record holds


def compile_mode(args: Args) -> str:
    """--compile-mode, or with --cuda-graphs the mode that adds CUDA graphs to it (torch.compile's docstring)."""
    logging.getLogger("torch._dynamo.variables.ctx_manager").setLevel("ERROR")  # off: "Profiler record function ... ignored"
    graphs = {"default": "reduce-overhead", "max-autotune-no-cudagraphs": "max-autotune"}
    return graphs[args.compile_mode] if args.cuda_graphs else args.compile_mode


def cuda_graphed(args: Args, fn):
    """A compiled fn as --cuda-graphs calls it: a graph's outputs live in memory the next replay reuses, "clone the
    tensor outside of torch.compile()" (torch/_inductor/cudagraph_trees.py); the inputs torch copies in."""
    if not args.cuda_graphs:
        return fn
    return lambda *inputs: torch.utils._pytree.tree_map_only(torch.Tensor, torch.clone, fn(*inputs))


def check_args(args: Args):
    """Validate everything first (benchback/checks.py), then set the devices and matmul precision: (hidden, device, jax_device)."""
    hidden = checks.check_offpolicy_args(args, "DQN", actions="discrete")
    # One device for both frameworks, so that DLPack hands buffers over without a copy: the GPU if both see one.
    gpu = args.cuda and torch.cuda.is_available()
    if gpu != (args.cuda and jax.default_backend() == "gpu"):
        has, lacks = ("torch", "jax") if gpu else ("jax", "torch")
        raise checks.UsageError(f"{has} sees a GPU but {lacks} does not: install both with CUDA or pass --no-cuda")
    if args.cuda_graphs and not gpu:
        raise checks.UsageError("--cuda-graphs needs an NVIDIA GPU that torch and jax both see: CUDA graphs replay GPU work")
    if args.cuda_graphs and args.env_backend.startswith("gymnasium"):
        raise checks.UsageError(f"--cuda-graphs cannot run with --env-backend {args.env_backend}: its envs step on the host")
    if args.matmul_precision == "high" and not gpu:
        raise checks.UsageError(
            "--matmul-precision high (TF32) needs an NVIDIA GPU: on CPUs only highest is the same arithmetic"
        )
    if args.cuda and not gpu:
        print("no GPU visible to torch or jax: running on the CPU", file=sys.stderr)
    index = torch.cuda.current_device() if gpu else 0
    device, jax_device = (
        torch.device("cuda", index) if gpu else torch.device("cpu"),
        jax.devices("gpu" if gpu else "cpu")[index],
    )
    jax.config.update("jax_default_device", jax_device)
    torch.set_float32_matmul_precision(args.matmul_precision)  # highest: float32; high: TF32, as JAX's tensorfloat32
    return hidden, device, jax_device


def synchronize(device: torch.device):
    """Wait for the device: on CPU nothing to wait for (torch runs each op before it returns, DLPack awaited every JAX
    output it handed over); on GPU all streams, JAX's included (one CUDA context), with --sync-debug's trap off."""
    if device.type == "cuda":
        mode = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize(device)
        torch.cuda.set_sync_debug_mode(mode)


def no_syncs(args: Args, device: torch.device, iteration: int) -> contextlib.ExitStack:
    """What a timed iteration may not do: read a tensor back to the host. jax's transfer guard fails an implicit copy
    from the env steps, and on a GPU --sync-debug's trap (torch's own) any op that synchronizes. Only iteration 0 may
    read back, as compiling does: the env step's closed-over constants (gymnax's MinAtar tables), Inductor's set-up (its
    pattern matcher's), recording a CUDA graph, which begins with torch.cuda.synchronize() (torch/cuda/graphs.py)."""
    guards = contextlib.ExitStack()
    guards.enter_context(jax.transfer_guard("disallow"))
    guards.enter_context(jax.transfer_guard_device_to_host("disallow" if iteration else "allow"))
    if args.sync_debug and device.type == "cuda" and iteration > 0:
        torch.cuda.set_sync_debug_mode("error")
        guards.callback(torch.cuda.set_sync_debug_mode, "default")
    return guards


if __name__ == "__main__":
    sys.exit(cli.main(Args, train))
