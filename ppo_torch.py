"""PPO on gymnax with PyTorch, eager: the torch variant of benchback.

Read it beside ppo_jax_linen.py (same Args, sections and PPO details) or CleanRL's ppo.py. The environments stay in
JAX, one jitted, vmapped gymnax step per rollout step; actions and observations cross by DLPack without a copy, the
other env outputs once a rollout. Network, GAE, loss and Adam run op by op from Python (eager); `train` holds the loop.

    python ppo_torch.py --env-id CartPole-v1 --hidden 256,256,256
"""

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
    """the gymnax environment id (discrete or continuous actions), or Craftax-Classic-Symbolic-v1 or Craftax-Symbolic-v1"""
    total_timesteps: int = 819200
    """total environment steps; rounded down to whole iterations of num_envs * num_steps"""
    num_envs: int = 32
    """the number of parallel environments"""
    num_steps: int = 256
    """the number of steps per environment per rollout"""
    num_minibatches: int = 8
    """the number of minibatches per epoch"""
    update_epochs: int = 10
    """the number of passes over the rollout per update"""
    learning_rate: float = 2.5e-4
    """the learning rate of Adam"""
    anneal_lr: bool = True
    """anneal the learning rate linearly to 0 over the iterations"""
    gamma: float = 0.99
    """the discount factor"""
    gae_lambda: float = 0.95
    """the lambda of generalized advantage estimation"""
    clip_coef: float = 0.2
    """the surrogate clipping coefficient"""
    clip_vloss: bool = True
    """clip the value loss as in the PPO paper's code"""
    ent_coef: float = 0.01
    """the coefficient of the entropy bonus"""
    vf_coef: float = 0.5
    """the coefficient of the value loss"""
    max_grad_norm: float = 0.5
    """the maximum global norm of the gradient"""
    bootstrap_truncation: bool = True
    """bootstrap time-limit truncations with V(final observation); off treats them as terminations"""
    hidden: str = "64,64"
    """hidden layer sizes of the actor and of the critic, comma-separated, e.g. 256,256,256"""
    tensorboard: bool = True
    """write TensorBoard logs to runs/{run_name}"""
    # The benchmark's, not PPO's: how the run is set up, timed and recorded.
    env_backend: Literal["gymnax", "torch", "gymnasium"] = "gymnax"
    """gymnax: JAX's, handed over by DLPack every step; torch: benchback/torch_ports.py, gymnax's dynamics in PyTorch;
    gymnasium: its vector envs on the CPU. torch and gymnasium have CartPole-v1, Acrobot-v1 and Pendulum-v1."""
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    sync_timing: bool = False
    """time rollout(+GAE) and update separately, blocking after each"""
    sync_debug: bool = False
    """on a GPU, make torch raise on any host sync inside a timed iteration (torch.cuda.set_sync_debug_mode)"""
    json_out: Optional[str] = None
    """write the result record (JSON, schema 2) to this path"""
    quiet: bool = False
    """print no progress line per iteration"""


# ---------------------------------------------------------------- network
def layer(in_dim: int, out_dim: int, gain: float) -> nn.Linear:
    linear = nn.Linear(in_dim, out_dim)
    nn.init.orthogonal_(linear.weight, gain)
    nn.init.zeros_(linear.bias)
    return linear


class MLP(nn.Sequential):
    def __init__(self, in_dim: int, hidden: Sequence[int], out_dim: int, out_gain: float):
        layers = []
        for size in hidden:
            layers += [layer(in_dim, size, np.sqrt(2)), nn.Tanh()]
            in_dim = size
        super().__init__(*layers, layer(in_dim, out_dim, out_gain))


class Agent(nn.Module):
    """Separate actor and critic tanh MLPs; observations are flattened (MinAtar grids are 10x10xC)."""

    def __init__(self, obs_dim: int, hidden: Sequence[int], num_actions: int, continuous: bool):
        super().__init__()
        self.actor = MLP(obs_dim, hidden, num_actions, out_gain=0.01)  # a logit per action, or a mean per dimension
        self.critic = MLP(obs_dim, hidden, 1, out_gain=1.0)
        self.log_std = nn.Parameter(torch.zeros(num_actions)) if continuous else None  # CleanRL's: learned, for every state

    def forward(self, obs):
        return self.policy(obs), self.value(obs)

    def policy(self, obs):  # acting needs the actor alone
        return Policy(self.actor(obs.reshape(obs.shape[0], -1).float()), self.log_std)

    def value(self, obs):
        return self.critic(obs.reshape(obs.shape[0], -1).float()).squeeze(-1)


class Policy(NamedTuple):  # a categorical over the logits; with log_std (continuous actions), a Normal around them
    logits: torch.Tensor
    log_std: Optional[torch.Tensor]

    def sample(self):  # discrete: torch.multinomial's draws (CleanRL's Categorical.sample), argmax(probs / q), q ~ Exp(1),
        if self.log_std is None:  # without its check of the probabilities on the host: a GPU sync every step
            return (self.logits.log_softmax(-1).exp() / torch.empty_like(self.logits).exponential_()).argmax(-1)
        return self.logits + self.log_std.exp() * torch.randn_like(self.logits)

    def log_prob(self, action):
        if self.log_std is None:
            return self.logits.log_softmax(-1).gather(-1, action[:, None]).squeeze(-1)
        return (-0.5 * ((action - self.logits) / self.log_std.exp()) ** 2 - self.log_std - np.log(2 * np.pi) / 2).sum(-1)

    def entropy(self):
        if self.log_std is None:
            logprobs = self.logits.log_softmax(-1)
            return -(logprobs.exp() * logprobs).sum(-1)
        return (0.5 + 0.5 * np.log(2 * np.pi) + self.log_std).sum(-1)  # the same in every state


# ---------------------------------------------------------------- rollout
class Transition(NamedTuple):  # one step of every env; a rollout's steps are stacked: (num_steps, num_envs, ...)
    obs: torch.Tensor
    action: torch.Tensor
    logprob: torch.Tensor
    reward: torch.Tensor  # this and the fields below: the envs' EnvStep (benchback/torch_envs.py)
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor
    finished: torch_envs.EpisodeStats


class Carry(NamedTuple):  # what one iteration hands the next: the envs' state, and the observation to act on (torch)
    env_state: object
    obs: torch.Tensor


def act(agent: Agent, obs):
    """An action for each observation, sampled (continuous: unclipped, the env step clips it), and its log-probability."""
    policy = agent.policy(obs)
    action = policy.sample()
    return action, policy.log_prob(action)


def rollout(carry: Carry, env_step, envs, num_steps: int):
    """num_steps calls of env_step: the carry after them, and their Transitions stacked."""
    steps = []
    for _ in range(num_steps):
        carry, transition = env_step(carry)
        steps.append(transition)
    return carry, envs.stack(steps)


# ---------------------------------------------------------------- compute_gae
def compute_gae(rewards, values, bootstrap_values, terminated, truncated, gamma, gae_lambda):
    """GAE over (num_steps, num_envs) tensors. bootstrap_values[t] is V of the observation step t reached before any
    reset: a truncation is bootstrapped, only a termination cuts the value off; either ends the episode. advantage[t] =
    delta[t] + discount[t] * advantage[t + 1], solved by doubling: log2(num_steps) rounds of whole-tensor ops."""
    advantages = rewards + gamma * bootstrap_values * (1.0 - terminated.float()) - values
    discounts = gamma * gae_lambda * (1.0 - (terminated | truncated).float())
    shift = 1
    while shift < len(advantages):
        # Out of place: each round reads the previous round's values. The last `shift` steps are complete already.
        advantages = torch.cat([advantages[:-shift] + discounts[:-shift] * advantages[shift:], advantages[-shift:]])
        discounts = torch.cat([discounts[:-shift] * discounts[shift:], discounts[-shift:]])
        shift *= 2
    return advantages, advantages + values


class Batch(NamedTuple):
    obs: torch.Tensor
    action: torch.Tensor
    logprob: torch.Tensor
    value: torch.Tensor
    advantage: torch.Tensor
    returns: torch.Tensor


def make_batch(traj: Transition, critic, args: Args):
    """The critic, once over the rollout's observations and final observations; GAE: the flat batch, episode statistics."""
    obs = torch.cat([traj.obs, traj.final_obs]).flatten(0, 1)
    values, next_values = critic(obs).view(2, args.num_steps, -1)
    terminated = traj.terminated if args.bootstrap_truncation else traj.terminated | traj.truncated
    advantages, returns = compute_gae(
        traj.reward, values, next_values, terminated, traj.truncated, args.gamma, args.gae_lambda
    )
    batch = Batch(*(x.flatten(0, 1) for x in (traj.obs, traj.action, traj.logprob, values, advantages, returns)))
    return batch, record.torch_logged(traj, values, returns)  # what the log shows


# ---------------------------------------------------------------- ppo_loss
def ppo_loss(policy: Policy, value, mb: Batch, args: Args):
    """Clipped surrogate + (clipped) value loss - entropy bonus, from the network's outputs."""
    entropy = policy.entropy().mean()
    logratio = policy.log_prob(mb.action) - mb.logprob
    ratio = logratio.exp()
    advantage = (mb.advantage - mb.advantage.mean()) / (mb.advantage.std(correction=0) + 1e-8)  # as jnp.std
    pg_loss = torch.max(-advantage * ratio, -advantage * ratio.clamp(1 - args.clip_coef, 1 + args.clip_coef)).mean()
    v_loss = (value - mb.returns) ** 2
    if args.clip_vloss:
        v_clipped = mb.value + (value - mb.value).clamp(-args.clip_coef, args.clip_coef)
        v_loss = torch.max(v_loss, (v_clipped - mb.returns) ** 2)
    v_loss = 0.5 * v_loss.mean()
    loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
    logratio, ratio = logratio.detach(), ratio.detach()
    return loss, {
        "policy_loss": pg_loss.detach(),
        "value_loss": v_loss.detach(),
        "entropy": entropy.detach(),
        "old_approx_kl": (-logratio).mean(),
        "approx_kl": ((ratio - 1) - logratio).mean(),
        "clipfrac": ((ratio - 1).abs() > args.clip_coef).float().mean(),
    }


# ---------------------------------------------------------------- update
LOSS_METRICS = ("policy_loss", "value_loss", "entropy", "old_approx_kl", "approx_kl", "clipfrac")


def minibatch_step(agent: Agent, optimizer, batch: Batch, index, args: Args):
    """One gradient step on the minibatch batch[index]: forward, loss, backward, global-norm clipping, Adam."""
    mb = Batch(*(x[index] for x in batch))
    policy, value = agent(mb.obs)
    loss, info = ppo_loss(policy, value, mb, args)
    loss.backward()
    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm)
    optimizer.step()
    # Cleared after the step, so that every call starts without gradients (compiled: one version), and by the module:
    # optimizer.zero_grad() does the same, but dynamo skips it.
    agent.zero_grad()
    return torch.stack([info[name] for name in LOSS_METRICS])


def update(learn_minibatch, batch: Batch, args: Args):
    """update_epochs passes over the batch in shuffled minibatches of a fixed size; mean metrics."""
    batch_size = batch.advantage.shape[0]
    minibatch_size = batch_size // args.num_minibatches
    metrics = 0.0
    for _ in range(args.update_epochs):
        perm = torch.randperm(batch_size, device=batch.advantage.device)
        for start in range(0, batch_size, minibatch_size):
            metrics = metrics + learn_minibatch(batch, perm[start : start + minibatch_size])  # on the device
    return dict(zip(LOSS_METRICS, metrics / (args.update_epochs * args.num_minibatches)))


# ---------------------------------------------------------------- train
def train(args: Args) -> dict:
    """Set up, then one loop over the iterations: rollout, the batch with its advantages, update. Returns the record."""
    start = time.perf_counter()
    hidden, device, jax_device = check_args(args)  # (below) which also sets the matmul precision
    compiles.count_compiles()  # from here on, each XLA compilation is counted (the record's compiles after iteration 0)
    num_iterations = args.total_timesteps // (args.num_envs * args.num_steps)

    # gymnax's, stepped in JAX and handed over by DLPack; or on --env-backend the torch ports or Gymnasium's
    envs = torch_envs.make(args.env_backend, args.env_id, args.num_envs, device, jax_device, args.seed)
    carry = Carry(*envs.reset(args.seed))
    torch.manual_seed(args.seed)  # after the envs: their resets draw from a generator of their own
    agent = Agent(int(np.prod(carry.obs.shape[1:])), hidden, envs.num_actions, envs.continuous).to(device)
    lr = torch.tensor(args.learning_rate, device=device)  # a tensor, which the schedule updates in place
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5, fused=True)

    def sample(obs):  # the action step: the actor alone
        return act(agent, obs)

    def env_step(carry: Carry):
        """Act with the actor alone, then step every env: the carry after the step, and the step's Transition."""
        action, logprob = sample(carry.obs)
        env_state, obs, output = envs.step(carry.env_state, action)
        return Carry(env_state, obs), Transition(carry.obs, action, logprob, *output)

    def learn_minibatch(batch: Batch, index):
        return minibatch_step(agent, optimizer, batch, index, args)

    critic = agent.value

    log = record.Log(args, VARIANT, {"torch": device, "jax": jax_device}, LIBRARIES, num_iterations, start)
    for iteration in range(num_iterations):
        if args.anneal_lr:  # CleanRL anneals once per iteration: the rate is constant within an update.
            lr.fill_(args.learning_rate * (1.0 - iteration / num_iterations))
        with log.timed(no_syncs(args, device, iteration)):  # (below) nothing in it waits for the device but its end
            with torch.no_grad():  # not inference_mode: the batch's tensors take part in the loss
                carry, traj = rollout(carry, env_step, envs, args.num_steps)
                batch, stats = make_batch(traj, critic, args)
            if args.sync_timing:  # the rollout (and GAE) timed apart from the update, after a wait of its own
                synchronize(device)
                log.rollout_done()
            losses = update(learn_minibatch, batch, args)
            synchronize(device)  # (below) the iteration ends when the device is done
        log.iteration(record.torch_fetched({**stats, **losses, "learning_rate": lr}))  # to the host, after the timer
    return log.record(list(agent.parameters()))


# ======================================================================================== benchmark harness
# Not PPO: what measures it. What every script does alike is in benchback/; here is PyTorch's own: devices, waits, guards.
import contextlib

# The process settings at the top: JAX would take 75% of the GPU's memory at once, and torch shares the card. torch's
# OpenMP threads would busy-wait for milliseconds after each op, taking the cores JAX's env step needs; they spin ~30 us
# (GOMP_SPINCOUNT, GNU OpenMP's, overriding PASSIVE): enough to bridge an update's ops, where PASSIVE wakes per op.
VARIANT = cli.variant_of(__file__)
# What benchmark.sh, plot.py and the tests know of this script, read without running it (bench/variants.py).
TOOLING = {
    "framework": "torch",
    "compiles": None,
    "order": 5,
    "color": "tab:brown",
    "compile_off_of": "torch_compile",
    "stacks": [
        {"tag": "torchenv", "flags": "--env-backend torch", "color": "teal"},
        {"tag": "gymnasium", "flags": "--env-backend gymnasium", "color": "rosybrown"},
    ],
}
LIBRARIES = ("jax", "jaxlib", "flax", "optax", "gymnax", "numpy", "torch")  # the versions the record holds


def check_args(args: Args):
    """Validate everything first (benchback/checks.py), then set the devices and matmul precision: (hidden, device, jax_device)."""
    hidden = checks.check_ppo_args(args)
    if args.env_backend == "gymnasium" and args.sync_debug:
        raise checks.UsageError(
            "--sync-debug cannot run with --env-backend gymnasium: its envs step on the host, which every step waits for"
        )
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
