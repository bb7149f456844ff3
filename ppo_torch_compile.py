"""PPO on gymnax with PyTorch and torch.compile: the torch_compile variant of benchback.

Read it beside ppo_torch.py: their diff is the compilation and little else. As in LeanRL, torch.compile wraps the
policy step, the critic and the whole minibatch update (loss, backward, clipping, Adam), shapes fixed: nothing recompiles.

    python ppo_torch_compile.py --env-id CartPole-v1 --hidden 256,256,256
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

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import torch
import torch.nn as nn
import tyro


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
    """gymnax: JAX's, handed over by DLPack every step; torch: torch_envs.py, gymnax's dynamics in PyTorch;
    gymnasium: its vector envs on the CPU. torch and gymnasium have CartPole-v1, Acrobot-v1 and Pendulum-v1."""
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    sync_timing: bool = False
    """time rollout(+GAE) and update separately, blocking after each"""
    sync_debug: bool = False
    """on a GPU, make torch raise on any host sync inside a timed iteration (torch.cuda.set_sync_debug_mode)"""
    compile_mode: Literal["default", "max-autotune-no-cudagraphs"] = "default"
    """torch.compile mode, without CUDA graphs (--cuda-graphs adds them)"""
    cuda_graphs: bool = False
    """on a GPU, replay the policy step, critic and minibatch update as CUDA graphs, recorded in iteration 0"""
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
class EnvStep(NamedTuple):  # what a step of every env gives besides the next observation
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array  # the observation reached before any auto-reset: its value bootstraps a truncation
    finished: "EpisodeStats"  # (below, for the log) the episodes that ended on this step (0 where none did)


class Transition(NamedTuple):  # one step of every env; a rollout's steps are stacked: (num_steps, num_envs, ...)
    obs: torch.Tensor
    action: torch.Tensor
    logprob: torch.Tensor
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor
    finished: "EpisodeStats"


class Runner(NamedTuple):  # what a rollout starts from: the envs' state, and the observation to act on (torch)
    env_state: object
    obs: torch.Tensor


class GymnaxState(NamedTuple):  # JAX arrays, on the JAX device
    env_state: object
    episode: "EpisodeStats"  # (below) of each env's episode so far
    key: jax.Array


class GymnaxEnvs:
    """num_envs of gymnax's environments, stepped from torch with torch_envs.py's interface: reset(seed) -> (state, obs),
    step(state, action) -> (state, obs, EnvStep), stack(steps) -> Transition. A step is one jitted JAX call; action and
    observation cross by DLPack without a copy, the other outputs stay in JAX until stack() hands a rollout's over."""

    def __init__(self, env_id: str, num_envs: int, jax_device):
        self.env, self.env_params = make_env(env_id)
        self.num_envs, self.jax_device = num_envs, jax_device
        space = self.env.action_space(self.env_params)  # Discrete, or Box (continuous actions)
        self.num_actions, self.continuous = (space.n, False) if hasattr(space, "n") else (space.shape[0], True)
        self.jax_step = jax.jit(self.step_envs)
        self.stack_steps = jax.jit(lambda outputs: jax.tree.map(lambda *steps: jnp.stack(steps), *outputs))  # one call
        # Neither allocator knows the other's stream: a buffer handed over and freed could be reused while a kernel queued
        # on the other stream still reads it. A rollout's are kept to the next one's end, past its iteration's sync.
        self.handed_over, self.previous = [], []

    def reset(self, seed: int):
        key, _, reset_key = jax.random.split(jax.random.key(seed), 3)  # as the JAX scripts split it: the same worlds
        reset = jax.vmap(self.env.reset, in_axes=(0, None))  # one key per env; the same params
        obs, env_state = reset(jax.random.split(reset_key, self.num_envs), self.env_params)
        episode = EpisodeStats(jnp.zeros(self.num_envs), jnp.zeros(self.num_envs, jnp.int32))
        # strongly typed (below), and committed to the device from the start: either change would retrace the step
        state, obs = jax.device_put((GymnaxState(strongly_typed(env_state), episode, key), obs), self.jax_device)
        self.handed_over.append(obs)
        return state, torch.from_dlpack(obs)

    def step_envs(self, state: GymnaxState, action):
        """Step every env once (gymnax resets finished ones), in JAX: the state after it, the observation, the rest."""
        key, step_key = jax.random.split(state.key)
        keys, step = jax.random.split(step_key, self.num_envs), jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        obs, env_state, reward, terminated, truncated, info = step(keys, state.env_state, action, self.env_params)
        episode, finished = count_episodes(state.episode, reward, jnp.logical_or(terminated, truncated))  # (below)
        output = EnvStep(reward, terminated, truncated, info["final_observation"], finished)
        return GymnaxState(env_state, episode, key), obs, output

    def step(self, state: GymnaxState, action: torch.Tensor):
        # torch -> JAX, zero-copy; on GPU, jax.dlpack.from_dlpack makes JAX's stream wait for torch's current stream.
        action = action if self.continuous else action.int()  # JAX runs without x64: it would copy an int64 action
        state, obs, output = self.jax_step(state, jax.dlpack.from_dlpack(action))
        self.handed_over += [action, obs]
        # JAX -> torch, zero-copy. JAX's __dlpack__ blocks until the buffer is ready on CPU; on GPU it makes
        # torch's current stream wait for it instead (no host sync).
        return state, torch.from_dlpack(obs), output

    def stack(self, steps: list) -> Transition:
        """A rollout's Transitions, one tensor a field: torch's stacked in torch, the envs' outputs by one jitted call."""
        self.previous.clear()  # (first: the memory they held is the stacked outputs')
        taken = [torch.stack(field) for field in zip(*(step[:3] for step in steps))]  # obs, action, logprob
        outputs = self.stack_steps([EnvStep(*step[3:]) for step in steps])
        self.previous, self.handed_over = self.handed_over + [outputs], []
        return Transition(*taken, *jax.tree.map(torch.from_dlpack, outputs))


def policy_step(agent: Agent, obs):
    """An action for each observation, sampled (continuous: unclipped; the environment clips it), and its log-probability."""
    policy = agent.policy(obs)
    action = policy.sample()
    return action, policy.log_prob(action)


def rollout(runner: Runner, env_step, envs, num_steps: int):
    """num_steps calls of env_step: the runner after them, and their Transitions stacked."""
    steps = []
    for _ in range(num_steps):
        runner, transition = env_step(runner)
        steps.append(transition)
    return runner, envs.stack(steps)


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
    return batch, logged(traj, values, returns)  # (below) what the log shows


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
    nn.utils.clip_grad_norm_(agent.parameters(), args.max_grad_norm, foreach=False)  # per-parameter: inductor fuses them
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
    torch._inductor.config.cpp_wrapper = device.type == "cpu"  # compiled code called from C++, not Python: less overhead
    torch._dynamo.config.trace_autograd_ops = True  # loss.backward() in the update's one graph (else compiled apart)
    num_iterations = args.total_timesteps // (args.num_envs * args.num_steps)

    envs = make_envs(args, device, jax_device)  # gymnax's (above), or on --env-backend torch_envs.py's (below)
    runner = Runner(*envs.reset(args.seed))
    torch.manual_seed(args.seed)  # after the envs: their resets draw from a generator of their own
    agent = Agent(int(np.prod(runner.obs.shape[1:])), hidden, envs.num_actions, envs.continuous).to(device)
    lr = torch.tensor(args.learning_rate, device=device)  # a tensor, which the schedule updates in place
    # foreach Adam, which inductor compiles into the update (fused is opaque to dynamo); capturable for a tensor lr
    optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5, foreach=True, capturable=True)
    compiled = compiler(args)  # torch.compile, with CUDA graphs on request (below)

    def policy(obs):
        return policy_step(agent, obs)

    act = compiled(policy)  # its random draws from inductor's generator (seeded from torch's), not torch's

    def env_step(runner: Runner):
        """Act with the actor alone, then step every env: the runner after the step, and the step's Transition."""
        action, logprob = act(runner.obs)
        env_state, obs, output = envs.step(runner.env_state, action)
        return Runner(env_state, obs), Transition(runner.obs, action, logprob, *output)

    if args.env_backend == "torch":  # policy, env step and episode counts: one compiled function, no host in between
        act, env_step = policy, compiled(env_step)  # (the step calls act: inside it, the policy itself)

    @compiled
    def learn_minibatch(batch: Batch, index):
        return minibatch_step(agent, optimizer, batch, index, args)

    critic = compiled(agent.value, calls_a_graph_once=True)

    log = Log(args, (device, jax_device), num_iterations, start)
    for iteration in range(num_iterations):
        if args.anneal_lr:  # CleanRL anneals once per iteration: the rate is constant within an update.
            lr.fill_(args.learning_rate * (1.0 - iteration / num_iterations))
        with log.timed(iteration) as rollout_done:  # the harness's timer, and its checks that nothing syncs (below)
            with torch.no_grad():  # not inference_mode: the batch's tensors take part in the loss
                runner, traj = rollout(runner, env_step, envs, args.num_steps)
                batch, stats = make_batch(traj, critic, args)
            rollout_done()  # with --sync-timing, the rollout (and GAE) are timed apart from the update
            losses = update(learn_minibatch, batch, args)
        log.iteration({**stats, **losses, "learning_rate": lr})
    return log.record(agent.parameters())


# ---------------------------------------------------------------- benchmark harness
# Everything below serves the benchmark, not PPO: input validation, the devices, compile counting, logging and
# the JSON record (docs/record.md). Its imports are here, so that the top shows what PPO needs. It is the same in
# every script of one framework, but for the lines marked "# own" (tests/test_harness.py holds the copies so).
import contextlib
import importlib.metadata
import io
import json
import logging  # own
import platform
import re
import resource
import subprocess

from jax._src.lib import cuda_versions  # the CUDA plugin's version queries (None without one)
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins.text.summary_v2 import text_pb
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter

# Process settings, made at the top, before jax and torch start. JAX would take 75% of the GPU's memory at once;
# torch shares the card, so on demand. torch's OpenMP threads busy-wait for milliseconds after each op, taking the
# cores JAX's env step needs. They spin ~30 us instead (GOMP_SPINCOUNT, GNU OpenMP's, which torch's Linux wheels use;
# it overrides PASSIVE): enough to bridge the ops of an update, not a rollout's env step. Never spinning (PASSIVE)
# would cost a wake-up per op.
VARIANT = os.path.basename(__file__)[: -len(".py")].removeprefix("ppo_")
# What benchmark.sh, plot.py and the tests know of this script, read from this line without running it
# (bench/variants.py): its framework, what compiles its iteration, its row and colour in tables and figures.
TOOLING = {  # own
    "framework": "torch",
    "compiles": "torch.compile",
    "order": 6,
    "color": "tab:pink",
    "gpu_setting": {"tag": "graphs", "flags": "--cuda-graphs", "color": "tab:olive"},
    "stacks": [
        {"tag": "torchenv", "flags": "--env-backend torch", "color": "deeppink"},
        {"tag": "gymnasium", "flags": "--env-backend gymnasium", "color": "plum"},
        {"tag": "torchenv+graphs", "flags": "--env-backend torch --cuda-graphs", "color": "olivedrab", "gpu_only": True},
    ],
}


def compiler(args: Args):  # own: train's torch.compile
    """compiled(fn): fn compiled whole (a compiled module would compile its forward() alone), for fixed shapes, and with
    --cuda-graphs replayed as CUDA graphs; calls_a_graph_once for a function called once an iteration."""
    # What reduce-overhead adds to default and max-autotune to max-autotune-no-cudagraphs (torch.compile's docstring).
    graphs = {"default": "reduce-overhead", "max-autotune-no-cudagraphs": "max-autotune"}
    mode = graphs[args.compile_mode] if args.cuda_graphs else args.compile_mode
    logging.getLogger("torch._dynamo.variables.ctx_manager").setLevel("ERROR")  # off: "Profiler record function ... ignored"

    def compiled(fn, calls_a_graph_once: bool = False):
        fn = torch.compile(fn, mode=mode, dynamic=False)
        if not args.cuda_graphs:
            return fn
        # A first call warms a graph up, the second records it (cudagraph_trees.py): one called once an iteration (the
        # critic) runs twice in iteration 0, so that no graph is recorded after it.
        warm_up = [True] if calls_a_graph_once else []

        def replay(*inputs):
            if warm_up:
                warm_up.clear()
                replay(*inputs)  # the warm-up run; its outputs are computed again below
            # A graph's outputs live in memory the next replay reuses: "clone the tensor outside of torch.compile()"
            # (torch/_inductor/cudagraph_trees.py). Inputs other than parameters and optimizer state torch copies in.
            return torch.utils._pytree.tree_map_only(torch.Tensor, torch.clone, fn(*inputs))

        return replay

    return compiled


class UsageError(ValueError):
    """Bad input: reported in one line, exit code 2, nothing written."""


def make_env(env_id: str):
    """gymnax's environment and its parameters, or Craftax's from craftax_gymnax.py (imported for a Craftax id only)."""
    if env_id.startswith("Craftax"):
        import craftax_gymnax

        return craftax_gymnax.make(env_id)
    return gymnax.make(env_id)


def make_envs(args: Args, device: torch.device, jax_device):
    """The environments on --env-backend, behind one interface: GymnaxEnvs, or torch_envs.py's (imported only when asked
    for: with gymnax's environments, this file runs alone)."""
    if args.env_backend == "gymnax":
        return GymnaxEnvs(args.env_id, args.num_envs, jax_device)
    import torch_envs

    return torch_envs.make_for_ppo(args.env_backend, args.env_id, args.num_envs, device, args.seed)


class EpisodeStats(NamedTuple):  # per env: the return and length of its episode so far, or of one that just ended
    returns: jax.Array
    lengths: jax.Array


def count_episodes(episode: EpisodeStats, reward, done):
    """After a step: each env's episode so far (0 where one ended), and the episodes that ended (0 where none did)."""
    returns, lengths = episode.returns + reward, episode.lengths + 1
    finished = EpisodeStats(jnp.where(done, returns, 0.0), jnp.where(done, lengths, 0))
    return EpisodeStats(jnp.where(done, 0.0, returns), jnp.where(done, 0, lengths)), finished


def logged(traj, values, returns) -> dict:
    """What the log shows of an iteration, computed on the device: how many episodes ended, their returns and lengths
    summed, and how much of the returns' variance the critic explains."""
    episodes, finished = (traj.terminated | traj.truncated).sum(), traj.finished
    stats = dict(episodes=episodes, return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())
    return stats | dict(explained_variance=1 - (returns - values).var(correction=0) / returns.var(correction=0))


def action_space(env_id: str) -> dict:
    """The environment's actions, as the record names them: discrete (how many) or continuous (the shape, the bounds)."""
    if env_id.startswith("Craftax"):  # all discrete; named without building one
        return {"kind": "discrete"}
    env, env_params = make_env(env_id)
    space = env.action_space(env_params)
    if isinstance(space, gymnax.environments.spaces.Discrete):
        return {"kind": "discrete", "n": int(space.n)}
    return {
        "kind": "continuous",
        "shape": list(space.shape),
        "low": np.asarray(space.low).tolist(),
        "high": np.asarray(space.high).tolist(),
    }


def strongly_typed(env_state):
    """gymnax's reset leaves some fields weakly typed (MountainCar's velocity is jnp.array(0.0)) and a step makes them
    strong: a jitted step would trace and compile again on its second call. Strong from the start (Craftax's state also
    holds typed PRNG keys, which have no weak type)."""
    return jax.tree.map(lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x, env_state)


def parse_hidden(text: str) -> tuple[int, ...]:
    parts = [p.strip() for p in text.split(",")]
    if not text.strip() or not all(p.isdigit() for p in parts) or min(int(p) for p in parts) <= 0:
        raise UsageError(f"--hidden must be comma-separated positive integers such as 64,64; got {text!r}")
    return tuple(int(p) for p in parts)


def check_writable(path: str) -> None:
    """--json-out must name a file that can be written: found out before the run, not after it. The tools' rule
    (bench/outputs.py): no empty path, no directory's name ("new/"), no file its mode makes read-only."""
    if not path:
        raise UsageError("--json-out is empty; name a file, such as 'run.json'")
    if os.path.isdir(path) or path.endswith(os.sep):  # "new/" names a directory, absent or not
        what = "is" if os.path.isdir(path) else "names"
        raise UsageError(
            f"--json-out {path!r} {what} a directory; name a file in it, such as {os.path.join(path, 'run.json')!r}"
        )
    if os.path.exists(path) and not (os.access(path, os.W_OK) and os.stat(path).st_mode & 0o222):  # root: the mode
        raise UsageError(f"--json-out {path!r} is read-only: make it writable, or name another file")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(parent):  # write_json_atomic creates the missing directories below the nearest that exists
        if os.path.exists(parent):
            raise UsageError(f"--json-out {path!r} cannot be written: {parent!r} is a file")
        parent = os.path.dirname(parent)
    probe = os.path.join(parent, f".tmp-{os.getpid()}.json")
    try:
        open(probe, "w").close()
        os.remove(probe)
    except OSError as e:
        raise UsageError(f"--json-out {path!r} cannot be written: {e.strerror} in {parent!r}") from None


SEEDS = 2**32  # the seeds every generator here takes (numpy's, jax's keys and torch's alike): 0 .. 2**32 - 1


def check_limits(args: Args) -> None:
    """A seed every generator takes, and networks whose parameters fit in this machine's memory: beyond either a run
    fails part way with a traceback (or after asking the allocator for terabytes)."""
    last = args.seed + getattr(args, "num_seeds", 1) - 1  # --num-seeds trains seed .. last; the torch scripts one seed
    if args.seed < 0 or last >= SEEDS:
        raise UsageError(f"--seed must be between 0 and {SEEDS - 1}, and so must every seed --num-seeds adds; got {args.seed}")
    hidden = parse_hidden(args.hidden)
    weights = sum(hidden) + sum(a * b for a, b in zip(hidden, hidden[1:]))  # a network's, its input and output aside
    needed = 2 * weights * 4 * 4  # actor and critic, float32: parameters, gradients and Adam's two moments
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if needed > memory:
        raise UsageError(
            f"--hidden {args.hidden} needs {needed / 2**30:.3g} GiB for its networks' parameters alone; this machine"
            f" has {memory / 2**30:.3g} GiB"
        )


def check_coefficients(args: Args) -> None:
    """PPO's coefficients in their ranges: out of them, training would run on quietly to a wrong result."""
    ranges = {  # what each must be: nan passes none of these tests
        "positive": (lambda x: 0 < x < float("inf"), ("learning_rate", "clip_coef", "max_grad_norm")),
        "0 or more": (lambda x: 0 <= x < float("inf"), ("ent_coef", "vf_coef")),
        "between 0 and 1": (lambda x: 0 <= x <= 1, ("gamma", "gae_lambda")),
    }
    for must_be, (holds, names) in ranges.items():
        for name in names:
            if not holds(getattr(args, name)):
                raise UsageError(f"--{name.replace('_', '-')} must be {must_be}; got {getattr(args, name)}")


def check_args(args: Args):
    """Validate everything before anything is built or written, then set jax's device and the matmul precision; returns
    (hidden, device, jax_device)."""
    hidden = parse_hidden(args.hidden)
    for name in ("total_timesteps", "num_envs", "num_steps", "num_minibatches", "update_epochs"):
        if getattr(args, name) <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive; got {getattr(args, name)}")
    check_coefficients(args)
    batch_size = args.num_envs * args.num_steps
    if batch_size % args.num_minibatches:
        raise UsageError(f"num_envs * num_steps = {batch_size} is not divisible by --num-minibatches {args.num_minibatches}")
    if args.total_timesteps < batch_size:
        raise UsageError(f"--total-timesteps {args.total_timesteps} is smaller than one batch of {batch_size} steps")
    if args.json_out is not None:
        check_writable(args.json_out)
    check_limits(args)
    if args.env_backend != "gymnax":
        import torch_envs  # only when asked for; first, so that a wrong id is told this backend's ids alone

        if args.env_id not in torch_envs.ENVS:
            raise UsageError(f"--env-backend {args.env_backend} has {', '.join(torch_envs.ENVS)}, not --env-id {args.env_id}")
    supported = [e for e in gymnax.registered_envs if e != "MNISTBandit-bsuite"]  # that one downloads MNIST when built
    supported += ["Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1"]  # Craftax's symbolic ones (pixels: textures)
    if args.env_id not in supported:  # named with the ids it can train, by their kind of actions
        kinds = {"discrete": [], "continuous": []}
        for e in supported:
            kinds[action_space(e)["kind"]].append(e)
        ids = "; ".join(f"{kind}-action ids: {', '.join(ids)}" for kind, ids in kinds.items())
        raise UsageError(f"unsupported --env-id {args.env_id!r}; {ids}")
    if args.env_backend == "gymnasium" and args.sync_debug:
        raise UsageError(
            "--sync-debug cannot run with --env-backend gymnasium: its envs step on the host, which every step waits for"
        )
    # One device for both frameworks, so that DLPack hands buffers over without a copy: the GPU if both see one.
    gpu = args.cuda and torch.cuda.is_available()
    if gpu != (args.cuda and jax.default_backend() == "gpu"):
        has, lacks = ("torch", "jax") if gpu else ("jax", "torch")
        raise UsageError(f"{has} sees a GPU but {lacks} does not: install both with CUDA or pass --no-cuda")
    if args.cuda_graphs and args.env_backend == "gymnasium":  # own
        raise UsageError("--cuda-graphs cannot capture --env-backend gymnasium: its envs step on the host")  # own
    if args.cuda_graphs and not gpu:  # own
        raise UsageError("--cuda-graphs needs an NVIDIA GPU that torch and jax both see: CUDA graphs replay GPU work")  # own
    if args.cuda and not gpu:
        print("no GPU visible to torch or jax: running on the CPU", file=sys.stderr)
    if args.matmul_precision == "high" and not gpu:
        raise UsageError("--matmul-precision high (TF32) needs an NVIDIA GPU: on CPUs only highest is the same arithmetic")
    index = torch.cuda.current_device() if gpu else 0
    device, jax_device = (
        torch.device("cuda", index) if gpu else torch.device("cpu"),
        jax.devices("gpu" if gpu else "cpu")[index],
    )
    jax.config.update("jax_default_device", jax_device)
    torch.set_float32_matmul_precision(args.matmul_precision)  # highest: float32; high: TF32, as JAX's tensorfloat32
    return hidden, device, jax_device


def gpu_info(device: torch.device, jax_device) -> Optional[dict]:
    """What a GPU result needs to be read, as each framework reports it (the driver as nvidia-smi does); None on the CPU."""
    if device.type == "cpu":
        return None
    version = lambda name: getattr(cuda_versions, name, lambda: None)() if cuda_versions else None
    cuda = {"cuda_runtime": version("cuda_runtime_get_version"), "cudnn": version("cudnn_get_version")}
    jax_info = {"device_kind": jax_device.device_kind, "platform_version": jax_device.client.platform_version, **cuda}
    torch_info = {"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    driver = run_quietly("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")  # a line per GPU
    driver = driver and driver.split()[0]
    # Each allocator's own peak (both frameworks allocate on this GPU): torch counts tensors, XLA its buffers.
    jax_peak = (jax_device.memory_stats() or {}).get("peak_bytes_in_use")
    peak = {"torch": torch.cuda.max_memory_allocated(device) / 2**20, "jax": jax_peak and jax_peak / 2**20}
    return {
        "name": torch.cuda.get_device_name(device),
        "driver": driver,
        "torch": torch_info,
        "jax": jax_info,
        "peak_memory_mb": peak,
    }


def synchronize(device: torch.device):
    """Wait for the device. On CPU there is nothing to wait for: torch runs each op before it returns, and DLPack
    awaited every JAX output it handed to torch. On GPU, torch.cuda.synchronize waits for all streams of the device,
    JAX's included (one CUDA context): the one sync an iteration ends with, so --sync-debug's trap is off for it."""
    if device.type == "cuda":
        mode = torch.cuda.get_sync_debug_mode()
        torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize(device)
        torch.cuda.set_sync_debug_mode(mode)


def cuda_sync_debug(on: bool) -> contextlib.ExitStack:
    """torch's own trap for host syncs on CUDA ("error": an op that synchronizes raises), while open."""
    trap = contextlib.ExitStack()
    if on:
        torch.cuda.set_sync_debug_mode("error")
        trap.callback(torch.cuda.set_sync_debug_mode, "default")
    return trap


LIBRARIES = ("jax", "jaxlib", "flax", "optax", "gymnax", "numpy", "torch")  # own: the versions the record holds
COMPILES = []  # one entry per XLA compilation in this process, from jax.monitoring's events
jax.monitoring.register_event_duration_secs_listener(
    lambda event, duration, **_: COMPILES.append(event) if event == "/jax/core/compile/backend_compile_duration" else None
)
# The persistent compilation cache's answers, where benchmark.sh turns it on (docs/method.md, "Compiler caches"). A hit
# loads the program instead of compiling it (jax/_src/compiler.py, compile_or_get_cached: the hit is recorded and no
# backend compile follows), so a hit counts as a compilation too: a program traced again after iteration 0 is found
# either way. A miss is recorded as its compiled program is written (compilation_cache.py, put_executable_and_time).
JAX_CACHE = {"hits": 0, "misses": 0}


def count_cache_event(event: str, **_) -> None:
    for answer in ("hits", "misses"):
        if event == f"/jax/compilation_cache/cache_{answer}":
            JAX_CACHE[answer] += 1
            if answer == "hits":
                COMPILES.append(event)


jax.monitoring.register_event_listener(count_cache_event)
# own: and one per dynamo compilation, a frame (re)compiled, a lazy backward compiled or a CUDA graph recorded
torch._dynamo.callback_handler.register_start_callback(lambda _: COMPILES.append("dynamo"))  # own


class Log:
    """The untimed bookkeeping of the iterations: plan and progress lines, TensorBoard, the JSON record."""

    def __init__(self, args: Args, devices: tuple, num_iterations: int, start: float):
        (self.device, self.jax_device), self.args, self.num_iterations, self.start = devices, args, num_iterations, start
        self.commit = run_quietly("git", "rev-parse", "HEAD")  # now, not at the end: the checkout may move
        self.durations, self.phases, self.finished = [], [], []
        envs = "" if args.env_backend == "gymnax" else f"+{args.env_backend}"  # the environments' stack, if not gymnax
        run = f"runs/{args.env_id}__{args.exp_name}{envs}__{args.seed}__{int(time.time())}"
        self.writer = Writer(run) if args.tensorboard else None
        if self.writer:  # the hyperparameters as a text summary, as CleanRL writes them
            table = "\n".join(["|param|value|", "|-|-|", *(f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items())])
            text = EventFileWriter(run)
            text.add_event(Event(wall_time=time.time(), step=0, summary=text_pb("hyperparameters", table)))
            text.close()
        if not args.quiet:
            plan = f"{num_iterations} iterations of {args.num_envs} envs x {args.num_steps} steps"
            print(f"{VARIANT}{envs} on {self.device}: {args.env_id}, hidden {args.hidden}, {plan}")
        self.setup_duration = time.perf_counter() - start

    @contextlib.contextmanager
    def timed(self, iteration: int):
        """Time one iteration, to the one sync that ends it; inside, `rollout_done()` ends the rollout's phase (with
        --sync-timing, after a sync of its own). No host read of a tensor in between: the JAX env steps run under jax's
        transfer guard, so that an implicit copy between host and device fails the run instead of slowing it, and
        --sync-debug's trap is on. Only iteration 0 may read back to the host, as compiling does: the env step's
        closed-over constants (such as gymnax's MinAtar tables), Inductor's own set-up (its pattern matcher's), and
        recording a CUDA graph, which begins with torch.cuda.synchronize() (torch/cuda/graphs.py)."""
        split = []

        def rollout_done():
            if self.args.sync_timing:
                synchronize(self.device)
                split.append(time.perf_counter())

        t0 = time.perf_counter()
        with (
            jax.transfer_guard("disallow"),
            jax.transfer_guard_device_to_host("disallow" if iteration else "allow"),
            cuda_sync_debug(self.args.sync_debug and self.device.type == "cuda" and iteration > 0),
        ):
            yield rollout_done
            synchronize(self.device)
        end = time.perf_counter()
        self.durations.append(end - t0)
        self.phases.append((split[0] - t0, end - split[0]) if split else None)

    def iteration(self, metrics: dict):
        """The iteration just timed: its metrics fetched at once, the progress line and TensorBoard."""
        metrics = dict(zip(metrics, torch.stack([x.float() for x in metrics.values()]).tolist()))  # one fetch
        episodes = int(metrics["episodes"])
        mean_return = float(metrics["return_sum"]) / episodes if episodes else None
        self.finished.append((float(metrics["return_sum"]), episodes))
        done = len(self.durations)
        step = done * self.args.num_envs * self.args.num_steps
        sps = int(step / sum(self.durations))
        if self.writer:
            if episodes:
                self.writer.add_scalar("charts/episodic_return", mean_return, step)
                self.writer.add_scalar("charts/episodic_length", float(metrics["length_sum"]) / episodes, step)
            self.writer.add_scalar("charts/SPS", sps, step)
            self.writer.add_scalar("charts/learning_rate", metrics["learning_rate"], step)
            for name in metrics.keys() - {"episodes", "return_sum", "length_sum", "learning_rate"}:
                self.writer.add_scalar(f"losses/{name}", metrics[name], step)
        if not self.args.quiet:
            shown = "n/a" if mean_return is None else f"{mean_return:.1f}"
            steady = self.durations[1:]  # iteration 0 compiles: the time left is estimated from the iterations after it
            left = f"~{(self.num_iterations - done) * np.mean(steady):.0f}s left" if steady else "time left: after the next"
            elapsed = time.perf_counter() - self.start
            print(f"iteration {done}/{self.num_iterations}  SPS {sps}  return {shown}  {elapsed:.0f}s, {left}")
        if done == 1:
            self.compiles_after_first = len(COMPILES)

    def record(self, parameters) -> dict:
        """The JSON record (schema 2, README "The record") of a run that trained `parameters`."""
        if self.writer:
            self.writer.close()
        libraries = LIBRARIES + ("craftax",) * self.args.env_id.startswith("Craftax")
        libraries += ("gymnasium",) * (self.args.env_backend == "gymnasium")
        args, last = self.args, self.finished[-10:]
        finished = sum(n for _, n in last)
        gpu = gpu_info(self.device, self.jax_device)
        return {
            "schema_version": 2,
            "variant": VARIANT,
            "status": "ok",
            **{name: getattr(args, name) for name in ("env_id", "env_backend", "seed", "matmul_precision", "sync_timing")},
            "action_space": action_space(args.env_id),
            "normalization": None,  # observations and rewards as the environment gives them, in every variant
            "rollout": "python",  # a Python loop over the steps (in ppo_jax_linen.py: scan, or python with --rollout python)
            "hidden": list(parse_hidden(args.hidden)),
            "args": dataclasses.asdict(args),
            "device": gpu["name"] if gpu else "cpu",
            "devices": {"torch": str(self.device), "jax": str(self.jax_device)},
            "gpu": gpu,
            "host": platform.node(),
            "cpu": cpu_info(),
            "xla_flags": os.environ.get("XLA_FLAGS"),  # XLA's options (its CPU threads, a GPU's command buffers)
            "peak_host_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux counts KiB
            "versions": {"python": platform.python_version(), **{n: importlib.metadata.version(n) for n in libraries}},
            "git_commit": self.commit,
            "param_count": sum(p.numel() for p in parameters),
            "env_steps": len(self.durations) * args.num_envs * args.num_steps,
            "grad_steps": self.num_iterations * args.update_epochs * args.num_minibatches,
            "setup_duration": self.setup_duration,
            "iteration_durations": self.durations,
            "rollout_durations": [phases[0] for phases in self.phases] if args.sync_timing else None,
            "update_durations": [phases[1] for phases in self.phases] if args.sync_timing else None,
            "total_duration": time.perf_counter() - self.start,
            "compiles_after_first_iteration": len(COMPILES) - self.compiles_after_first,
            "caches": compiler_caches(),
            "episodic_return": [s / n if n else None for s, n in self.finished],
            "final_return": sum(s for s, _ in last) / finished if finished else None,
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }


def shown(final_return) -> str:
    """A final return for the progress line: one decimal; one per seed after --num-seeds."""
    if isinstance(final_return, list):
        return "[" + ", ".join(map(shown, final_return)) + "]"
    return "n/a" if final_return is None else f"{final_return:.1f}"


def cpu_info() -> dict:
    """The CPU model as Linux names it, the cores this process may use (timings of two models never mix), the
    OpenMP settings the process ran under (how torch's threads wait, which can change its CPU time twofold) and the
    allocator's (glibc's tunables, a preloaded malloc): whether freed memory goes back to the kernel, to be faulted
    in again page by page, which slows every call that allocates much afresh (docs/findings.md)."""
    first = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]  # the first processor's block
    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields:  # hypervisors may hide the name ("AMD EPYC"), not the family and model numbers
        model += f" (family {fields['cpu family']}, model {fields.get('model')})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    openmp = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    allocator = {name: os.environ.get(name) for name in ("GLIBC_TUNABLES", "LD_PRELOAD")}
    return {"model": model, "cores": cores, "openmp": openmp, "allocator": allocator}


def compiler_caches() -> dict:
    """Whether this process read and wrote persistent compiler caches, and what it found there. A hit loads the very
    program a miss compiled and wrote: JAX's executable (jax/_src/compilation_cache.py: get_executable_and_time
    deserializes what put_executable_and_time serialized); Inductor's generated code for the same graph, inputs,
    config and versions (torch/_inductor/codecache.py: FxGraphCache's key hashes them, _lookup_graph loads the module it
    wrote), whose counters these are. Dynamo traces every run anew."""
    inductor = torch._dynamo.utils.counters["inductor"]
    persistent = jax.config.jax_compilation_cache_dir is not None and not torch.compiler.config.force_disable_caches
    return {
        "persistent": persistent,
        "jax": dict(JAX_CACHE),
        "inductor": {"hits": inductor["fxgraph_cache_hit"], "misses": inductor["fxgraph_cache_miss"]},
    }


def run_quietly(*command: str) -> Optional[str]:
    """A command's output, or None if it is missing or fails."""
    try:
        out = subprocess.run(command, cwd=os.path.dirname(__file__) or ".", capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def write_json_atomic(path: str, record: dict) -> None:
    """Write a temporary file beside `path`, then rename it: readers never see half a file."""
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)), f".tmp-{os.getpid()}.json")
    os.makedirs(os.path.dirname(temporary), exist_ok=True)
    try:
        with open(temporary, "w") as f:
            json.dump(record, f, indent=1)
        os.replace(temporary, path)
    except BaseException:  # a disk that filled during the run, a Ctrl-C: no half file left behind
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


def parse_args(argv: Optional[Sequence[str]]) -> Args:
    """The command line as Args. tyro reports a bad one in a box of several lines: here it is one line, exit code 2."""
    told = io.StringIO()
    try:
        with contextlib.redirect_stderr(told):
            return tyro.cli(Args, args=argv)
    except SystemExit as e:
        if e.code:
            lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in told.getvalue().splitlines()]  # its colours out
            lines = [re.sub(r"^[\s│╭╰]*─*\s*|\s*─*[\s│╮╯]*$", "", line) for line in lines]  # and its box
            said = " ".join(line for line in lines if line.strip("─- ") and not line.startswith("For full helptext"))
            told = io.StringIO(f"error: {said} (--help lists every flag)\n")
        raise
    finally:
        sys.stderr.write(told.getvalue())


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # each progress line at once, also into a pipe
    try:
        result = train(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json_out is not None:
        try:
            write_json_atomic(args.json_out, result)
        except OSError as e:
            print(json.dumps(result))  # the run's numbers, so that they are not lost
            print(
                f"error: the record could not be written to {args.json_out!r} ({e.strerror}): it is printed above",
                file=sys.stderr,
            )
            return 1
    if not args.quiet:
        durations = result["iteration_durations"]
        steady = np.median(durations[1:] or durations)
        done = f"done: final_return {shown(result['final_return'])}  iteration 0 {durations[0]:.3f}s  steady {steady:.4f}s/iteration"
        print(f"{done}  compiles after iteration 0: {result['compiles_after_first_iteration']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
