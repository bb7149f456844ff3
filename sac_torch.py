"""SAC on gymnax with PyTorch, eager: the torch SAC variant of benchback.

Read it beside sac_jax_linen.py (same Args, sections and SAC details) or CleanRL's sac_continuous_action.py, whose loop
it keeps: act, step, store, sample, update. The replay buffer is preallocated tensors on the torch device, indexed
without reading anything back (rows drawn by torch.randint there, alpha a tensor). The environments stay in JAX, one
jitted, vmapped gymnax step per step, its outputs crossing by DLPack without a copy (torch_envs.GymnaxEnvs). The random
steps before learning_starts are timed apart.

    python sac_torch.py --env-id Pendulum-v1 --total-timesteps 15000 --learning-starts 1000
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
    env_id: str = "Pendulum-v1"
    """the gymnax environment id, one with continuous actions"""
    total_timesteps: int = 1000000
    """total environment steps: the random ones, then whole iterations of num_envs * steps_per_iteration"""
    num_envs: int = 1
    """the number of parallel environments"""
    buffer_size: int = 1_000_000
    """the replay memory buffer size (transitions)"""
    gamma: float = 0.99
    """the discount factor gamma"""
    tau: float = 0.005
    """target smoothing coefficient"""
    batch_size: int = 256
    """the batch size of sample from the replay memory"""
    learning_starts: int = 5000
    """environment steps of random actions, without updates, before learning starts"""
    policy_lr: float = 3e-4
    """the learning rate of the policy network optimizer"""
    q_lr: float = 1e-3
    """the learning rate of the Q network optimizer (and of alpha's)"""
    policy_frequency: int = 2
    """the frequency of training policy (delayed): that many actor updates every that many gradient steps"""
    target_network_frequency: int = 1
    """the frequency of updates for the target networks, in gradient steps"""
    alpha: float = 0.2
    """entropy regularization coefficient (without autotune)"""
    autotune: bool = True
    """automatic tuning of the entropy coefficient"""
    updates_per_step: int = 1
    """gradient steps per step of the envs (all num_envs of them at once, as CleanRL's loop): the update-to-data ratio;
    0 times the steps alone"""
    hidden: str = "256,256"
    """hidden layer sizes of the actor and of each Q network, comma-separated"""
    tensorboard: bool = True
    """write TensorBoard logs to runs/{run_name}"""
    # The benchmark's, not SAC's: how the run is set up, timed and recorded.
    steps_per_iteration: int = 1000
    """steps of the envs per timed iteration (each of num_envs envs steps this many times), each with its updates"""
    full_buffer: bool = False
    """after the random steps, copy their transitions into every row still empty, so that samples come from all
    buffer_size rows, as late in a long run (a timing setting: the copies are not new experience)"""
    env_backend: Literal["gymnax", "torch", "gymnasium"] = "gymnax"
    """gymnax: JAX's, handed over by DLPack every step; torch: benchback/torch_ports.py, gymnax's dynamics in PyTorch;
    gymnasium: its vector envs on the CPU. torch and gymnasium have Pendulum-v1."""
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    sync_debug: bool = False
    """on a GPU, make torch raise on any host sync inside a timed iteration (torch.cuda.set_sync_debug_mode)"""
    json_out: Optional[str] = None
    """write the result record (JSON, schema 2) to this path"""
    quiet: bool = False
    """print no progress line per iteration"""


# ---------------------------------------------------------------- network
LOG_STD_MAX = 2
LOG_STD_MIN = -5


def mlp(in_dim: int, hidden: Sequence[int]) -> nn.Sequential:
    """ReLU layers in nn.Linear's default init, which CleanRL's SAC keeps: weights and biases uniform in +-1/sqrt(fan_in),
    the distribution sac_jax_linen.py draws from, so that both frameworks start equal."""
    layers = []
    for size in hidden:
        layers += [nn.Linear(in_dim, size), nn.ReLU()]
        in_dim = size
    return nn.Sequential(*layers)


class SoftQNetwork(nn.Module):
    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int]):
        super().__init__()
        self.body, self.fc_out = mlp(obs_dim + action_dim, hidden), nn.Linear(hidden[-1], 1)

    def forward(self, obs, action):
        return self.fc_out(self.body(torch.cat([obs, action], -1))).squeeze(-1)


def tanh_gaussian(mean, log_std, noise, action_scale, action_bias):
    """CleanRL's get_action from the actor's outputs and standard normal noise: x = mean + std * noise (reparameterized),
    the action tanh(x) rescaled to the bounds, and its log-probability, the Normal's corrected for the squashing."""
    y = torch.tanh(mean + log_std.exp() * noise)
    log_prob = -0.5 * noise**2 - log_std - 0.5 * np.log(2 * np.pi) - torch.log(action_scale * (1 - y**2) + 1e-6)
    return y * action_scale + action_bias, log_prob.sum(-1)


class Actor(nn.Module):
    def __init__(self, obs_dim: int, hidden: Sequence[int], low: np.ndarray, high: np.ndarray):
        super().__init__()
        self.body = mlp(obs_dim, hidden)
        self.fc_mean, self.fc_logstd = nn.Linear(hidden[-1], len(low)), nn.Linear(hidden[-1], len(low))
        self.register_buffer("action_scale", torch.tensor((high - low) / 2.0, dtype=torch.float32))
        self.register_buffer("action_bias", torch.tensor((high + low) / 2.0, dtype=torch.float32))

    def forward(self, obs):
        x = self.body(obs)
        log_std = torch.tanh(self.fc_logstd(x))
        return self.fc_mean(x), LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)  # From SpinUp / Denis Yarats

    def get_action(self, obs, noise):
        return tanh_gaussian(*self(obs), noise, self.action_scale, self.action_bias)


class Agent(nn.Module):
    """CleanRL's networks: the actor, qf1 and qf2 and their targets (copies), and log alpha."""

    def __init__(self, obs_dim: int, action_dim: int, hidden: Sequence[int], low: np.ndarray, high: np.ndarray):
        super().__init__()
        self.actor = Actor(obs_dim, hidden, low, high)
        self.qf1, self.qf2 = SoftQNetwork(obs_dim, action_dim, hidden), SoftQNetwork(obs_dim, action_dim, hidden)
        self.qf1_target, self.qf2_target = copy.deepcopy(self.qf1), copy.deepcopy(self.qf2)
        self.log_alpha = nn.Parameter(torch.zeros(()))

    def trained(self) -> list:  # what the optimizers train: the targets only follow
        return [*self.actor.parameters(), *self.qf1.parameters(), *self.qf2.parameters(), self.log_alpha]


# ---------------------------------------------------------------- replay buffer
class Transitions(NamedTuple):  # one env step's transition per row: a sampled batch, or the buffer's data
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor  # the observation reached before any auto-reset: a truncation is bootstrapped from it
    terminated: torch.Tensor  # float: 1.0 where the episode terminated (not where it was truncated)


class ReplayBuffer:
    """Preallocated and circular, on the device: `data`'s next rows are pos, pos + 1, ...; its first `size` are full.
    pos and size live on the host, known without reading the device."""

    def __init__(self, capacity: int, obs_dim: int, action_dim: int, num_envs: int, device: torch.device):
        zeros = lambda *shape: torch.zeros((capacity, *shape), device=device)
        self.data = Transitions(zeros(obs_dim), zeros(action_dim), zeros(), zeros(obs_dim), zeros())
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

    def fill(self):
        """Every row full: the empty ones get copies of the stored ones, in order (--full-buffer)."""
        rows = torch.arange(self.capacity, device=self.offsets.device) % self.size
        for stored in self.data:
            stored.copy_(stored[rows])
        self.size = self.capacity


# ---------------------------------------------------------------- losses
def q_target(agent: Agent, batch: Transitions, noise, alpha, args: Args):
    """The soft TD target: reward + gamma * (min of the target Qs - alpha * log pi) at the next state, cut by termination."""
    with torch.no_grad():
        next_action, next_log_pi = agent.actor.get_action(batch.next_obs, noise)
        min_q = torch.min(agent.qf1_target(batch.next_obs, next_action), agent.qf2_target(batch.next_obs, next_action))
        return batch.reward + (1 - batch.terminated) * args.gamma * (min_q - alpha * next_log_pi)


def q_loss(agent: Agent, batch: Transitions, target):
    """Both Q networks' mean squared error to the target, summed."""
    q1, q2 = agent.qf1(batch.obs, batch.action), agent.qf2(batch.obs, batch.action)
    qf1_loss, qf2_loss = ((q1 - target) ** 2).mean(), ((q2 - target) ** 2).mean()
    info = dict(qf1_values=q1.mean(), qf2_values=q2.mean(), qf1_loss=qf1_loss, qf2_loss=qf2_loss)
    return qf1_loss + qf2_loss, {k: v.detach() for k, v in info.items()} | dict(qf_loss=(qf1_loss + qf2_loss).detach() / 2)


def actor_loss(agent: Agent, obs, noise, alpha):
    """alpha * log pi(a|s) - min Q(s, a), for a reparameterized a ~ pi(s). The Q networks run on detached parameters
    (LeanRL's qnet_params.data): the backward computes the actor's gradients alone, as jax.grad does in the JAX scripts,
    not CleanRL's Q-network gradients that its next critic step discards."""
    action, log_pi = agent.actor.get_action(obs, noise)
    q = lambda qf: torch.func.functional_call(qf, {k: v.detach() for k, v in qf.named_parameters()}, (obs, action))
    return (alpha * log_pi - torch.min(q(agent.qf1), q(agent.qf2))).mean()


def alpha_loss(log_alpha, log_pi, target_entropy):
    """Automatic entropy tuning: alpha rises while the policy's entropy (-log pi) is below the target."""
    return (-log_alpha.exp() * (log_pi + target_entropy)).mean()


# ---------------------------------------------------------------- update
class Optimizers(NamedTuple):  # Adam for the Q networks, the actor and log alpha, as CleanRL's
    q: torch.optim.Optimizer
    actor: torch.optim.Optimizer
    alpha: torch.optim.Optimizer


def update_critic(agent: Agent, optimizers: Optimizers, batch: Transitions, noise, alpha, args: Args) -> dict:
    """One Adam step of both Q networks toward the soft TD target (no gradient through it)."""
    loss, info = q_loss(agent, batch, q_target(agent, batch, noise, alpha, args))
    loss.backward()
    optimizers.q.step()
    agent.zero_grad()  # after the step: the next backward starts from none (dynamo skips optimizer.zero_grad())
    return info


def update_actor(agent: Agent, optimizers: Optimizers, obs, noise, alpha_noise, alpha, target_entropy, args: Args) -> dict:
    """One Adam step of the actor against the Q networks; then, with autotune, one of log alpha on a fresh sample, and
    alpha (a tensor, updated in place: no read back) follows it."""
    loss = actor_loss(agent, obs, noise, alpha)
    loss.backward()
    optimizers.actor.step()
    agent.zero_grad()
    info = dict(actor_loss=loss.detach(), alpha=alpha.clone(), alpha_loss=torch.zeros((), device=obs.device))
    if args.autotune:
        with torch.no_grad():
            _, log_pi = agent.actor.get_action(obs, alpha_noise)
        a_loss = alpha_loss(agent.log_alpha, log_pi, target_entropy)
        a_loss.backward()
        optimizers.alpha.step()
        agent.zero_grad()
        alpha.copy_(agent.log_alpha.detach().exp())
        info |= dict(alpha_loss=a_loss.detach())
    return info


def update(
    agent: Agent, optimizers: Optimizers, batch: Transitions, alpha, target_entropy, grad_step: int, args: Args
) -> tuple:
    """One gradient step, in CleanRL's order: the critic; every policy_frequency steps policy_frequency actor (and
    alpha) steps on the same batch; every target_network_frequency steps the targets move tau toward the critic. The
    critic's losses, and the actor's (None where it did not step)."""
    info = update_critic(agent, optimizers, batch, torch.randn_like(batch.action), alpha, args)
    actor_info = None
    if grad_step % args.policy_frequency == 0:
        for _ in range(args.policy_frequency):
            noise, alpha_noise = torch.randn((2, *batch.action.shape), device=batch.action.device)
            actor_info = update_actor(agent, optimizers, batch.obs, noise, alpha_noise, alpha, target_entropy, args)
    if grad_step % args.target_network_frequency == 0:
        with torch.no_grad():  # one call for every parameter: each lerp_'s arithmetic (ATen's foreach kernels call lerp)
            targets = [*agent.qf1_target.parameters(), *agent.qf2_target.parameters()]
            torch._foreach_lerp_(targets, [*agent.qf1.parameters(), *agent.qf2.parameters()], args.tau)
    return info, actor_info


# ---------------------------------------------------------------- train
class Carry(NamedTuple):  # what one step hands the next: the envs' state, and the observation to act on (torch)
    env_state: object
    obs: torch.Tensor


def train(args: Args) -> dict:
    """Set up; the random steps; then one loop over the iterations, CleanRL's per step: act, step, store, and
    updates_per_step times sample and update. Returns the record."""
    start = time.perf_counter()
    hidden, device, jax_device = check_args(args)  # (below) which also sets the matmul precision
    compiles.count_compiles()  # from here on, each XLA compilation is counted (the record's compiles after iteration 0)
    # gymnax's, stepped in JAX and handed over by DLPack; or on --env-backend the torch ports or Gymnasium's
    envs = torch_envs.make(args.env_backend, args.env_id, args.num_envs, device, jax_device, args.seed, tally=True)
    low, high = (np.broadcast_to(np.asarray(x, np.float32), envs.space.shape) for x in (envs.space.low, envs.space.high))
    random_steps = -(-args.learning_starts // args.num_envs)  # steps of every env, before learning starts
    num_iterations = (args.total_timesteps - random_steps * args.num_envs) // (args.num_envs * args.steps_per_iteration)
    grad_steps = num_iterations * args.steps_per_iteration * args.updates_per_step

    carry = Carry(*envs.reset(args.seed))
    torch.manual_seed(args.seed)  # after the envs: their resets draw from a generator of their own
    obs_dim, action_dim = carry.obs.shape[-1], len(low)
    agent = Agent(obs_dim, action_dim, hidden, low, high).to(device)
    optimizers = Optimizers(
        torch.optim.Adam([*agent.qf1.parameters(), *agent.qf2.parameters()], lr=args.q_lr, fused=True),
        torch.optim.Adam(agent.actor.parameters(), lr=args.policy_lr, fused=True),
        torch.optim.Adam([agent.log_alpha], lr=args.q_lr, fused=True),
    )
    alpha = agent.log_alpha.detach().exp() if args.autotune else torch.tensor(args.alpha, device=device)  # a tensor
    target_entropy = -float(action_dim)
    buffer = ReplayBuffer(args.buffer_size, obs_dim, action_dim, args.num_envs, device)
    low_t, high_t = torch.tensor(low, device=device), torch.tensor(high, device=device)

    def env_step(carry: Carry, random: bool) -> Carry:
        """Act (random: uniformly in the bounds; otherwise a sample of the actor), step every env, store the transitions."""
        if random:
            action = low_t + (high_t - low_t) * torch.rand((args.num_envs, action_dim), device=device)
        else:
            with torch.no_grad():
                action, _ = agent.actor.get_action(carry.obs, torch.randn((args.num_envs, action_dim), device=device))
        env_state, obs, out = envs.step(carry.env_state, action)
        reward, terminated, final_obs = envs.to_torch(out.reward, out.terminated, out.final_obs)
        buffer.store(Transitions(carry.obs, action, reward, final_obs, terminated.float()))
        return Carry(env_state, obs)

    random_start = time.perf_counter()
    for _ in range(random_steps):  # learning_starts steps of random actions, stored, without updates
        carry = env_step(carry, random=True)
    if args.full_buffer:
        buffer.fill()
    synchronize(device)
    random_duration = time.perf_counter() - random_start
    env_state, random_ended = envs.tally(carry.env_state)  # their episodes are not the iterations'
    carry = carry._replace(env_state=env_state)

    devices = {"torch": device, "jax": jax_device}
    log = record.Log(args, VARIANT, devices, LIBRARIES, num_iterations, start, args.steps_per_iteration, grad_steps)
    grad_step, info, actor_info = 0, {}, {}  # what the log shows: the last step's, the last actor step's
    for iteration in range(num_iterations):
        with log.timed(no_syncs(args, device, iteration)):  # (below) nothing in it waits for the device but its end
            for _ in range(args.steps_per_iteration):
                carry = env_step(carry, random=False)
                for _ in range(args.updates_per_step):
                    batch = buffer.sample(args.batch_size)
                    info, updated = update(agent, optimizers, batch, alpha, target_entropy, grad_step, args)
                    actor_info, grad_step = updated or actor_info, grad_step + 1
            synchronize(device)  # (below) the iteration ends when the device is done
        env_state, ended = envs.tally(carry.env_state)
        carry = carry._replace(env_state=env_state)
        log.iteration(record.torch_fetched(info | actor_info) | ended)  # to the host, after the timer
    fields = record.random_steps_fields(args, random_steps, random_duration, num_iterations, random_ended)
    return log.record(agent.trained(), rollout="python", extra=fields)


# ======================================================================================== benchmark harness
# Not SAC: what measures it. What every script does alike is in benchback/; here is PyTorch's own: its devices, what it waits for, its guards.
import contextlib

# The process settings at the top: JAX would take 75% of the GPU's memory at once, and torch shares the card. torch's
# OpenMP threads would busy-wait for milliseconds after each op, taking the cores JAX's env step needs; they spin ~30 us
# (GOMP_SPINCOUNT, GNU OpenMP's, overriding PASSIVE): enough to bridge an update's ops, where PASSIVE wakes per op.
VARIANT = cli.variant_of(__file__)
# What the tools will know of this script, read without running it (bench/variants.py).
TOOLING = {
    "framework": "torch",
    "compiles": None,
    "order": 5,
    "color": "tab:brown",
    "stacks": [
        {"tag": "torchenv", "flags": "--env-backend torch", "color": "teal"},
        {"tag": "gymnasium", "flags": "--env-backend gymnasium", "color": "rosybrown"},
    ],
}
LIBRARIES = ("jax", "jaxlib", "flax", "optax", "gymnax", "numpy", "torch")  # the versions the record holds


def check_args(args: Args):
    """Validate everything first (benchback/checks.py), then set the devices and matmul precision: (hidden, device, jax_device)."""
    hidden = checks.check_offpolicy_args(args, "SAC")
    # One device for both frameworks, so that DLPack hands buffers over without a copy: the GPU if both see one.
    gpu = args.cuda and torch.cuda.is_available()
    if gpu != (args.cuda and jax.default_backend() == "gpu"):
        has, lacks = ("torch", "jax") if gpu else ("jax", "torch")
        raise checks.UsageError(f"{has} sees a GPU but {lacks} does not: install both with CUDA or pass --no-cuda")
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
