"""PPO on gymnax with Equinox, one `eqx.filter_jit` per iteration.

Read it beside ppo_jax_linen.py: the same Args, PPO details and arithmetic, but the network is an `eqx.Module`, a
pytree that holds its own parameters, so the agent itself is what the scans carry, what `eqx.filter_value_and_grad`
differentiates and what optax updates. Rollout, GAE and update are still scans compiled into one program per iteration.

    python ppo_jax_equinox.py --env-id CartPole-v1 --hidden 256,256,256
"""

import dataclasses
import os
import sys
import time
from typing import Literal, NamedTuple, Optional, Sequence

import equinox as eqx
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import optax
import tyro


@dataclasses.dataclass(frozen=True)  # hashable: jax.jit takes it as a static argument
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
    num_seeds: int = 1
    """train seeds seed .. seed+num_seeds-1 at once: one compiled program, vmapped over a leading seed axis"""
    rollout: Literal["scan", "python"] = "scan"
    """scan: the rollout's steps in the iteration's one program; python: from a Python loop, one jitted call a step"""
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    sync_timing: bool = False
    """time rollout(+GAE) and update separately, blocking after each"""
    json_out: Optional[str] = None
    """write the result record (JSON, schema 2) to this path"""
    quiet: bool = False
    """print no progress line per iteration"""


# ---------------------------------------------------------------- network
class MLP(eqx.Module):
    layers: tuple[eqx.nn.Linear, ...]

    def __init__(self, in_dim: int, hidden: Sequence[int], out_dim: int, out_gain: float, key: jax.Array):
        sizes, gains = (in_dim, *hidden, out_dim), (*[np.sqrt(2)] * len(hidden), out_gain)
        layers = []
        for i, o, gain, layer_key in zip(sizes, sizes[1:], gains, jax.random.split(key, len(gains))):
            layer_key, weight_key = jax.random.split(layer_key)
            layer = eqx.nn.Linear(i, o, key=layer_key)  # Equinox's default init (uniform), replaced on the next line
            weight = jax.nn.initializers.orthogonal(gain)(weight_key, (o, i))  # biases: zeros, as in the other variants
            layers.append(eqx.tree_at(lambda layer: (layer.weight, layer.bias), layer, (weight, jnp.zeros(o))))
        self.layers = tuple(layers)

    def __call__(self, x):  # one observation: Equinox layers act on single examples, jax.vmap batches them
        for layer in self.layers[:-1]:
            x = jnp.tanh(layer(x))
        return self.layers[-1](x)


class Agent(eqx.Module):
    """Separate actor and critic tanh MLPs; observations are flattened (MinAtar grids are 10x10xC).
    Unlike Linen, Equinox builds the parameters in the constructor, so it needs the input size now."""

    actor: MLP  # a logit per action, or for continuous actions a mean per dimension
    critic: MLP
    log_std: Optional[jax.Array]  # continuous actions: CleanRL's log standard deviation per dimension, learned

    def __init__(self, obs_dim: int, hidden: Sequence[int], num_actions: int, continuous: bool, key: jax.Array):
        actor_key, critic_key = jax.random.split(key)
        self.actor = MLP(obs_dim, hidden, num_actions, out_gain=0.01, key=actor_key)
        self.critic = MLP(obs_dim, hidden, 1, out_gain=1.0, key=critic_key)
        self.log_std = jnp.zeros(num_actions) if continuous else None

    def __call__(self, obs):
        return self.policy(obs), self.value(obs)

    def policy(self, obs):  # acting needs the actor alone
        return Policy(jax.vmap(self.actor)(obs.reshape(obs.shape[0], -1).astype(jnp.float32)), self.log_std)

    def value(self, obs):
        return jax.vmap(self.critic)(obs.reshape(obs.shape[0], -1).astype(jnp.float32)).squeeze(-1)


class Policy(NamedTuple):  # a categorical over the logits; with log_std (continuous actions), a Normal around them
    logits: jax.Array
    log_std: Optional[jax.Array]

    def sample(self, key):
        if self.log_std is None:
            return jax.random.categorical(key, self.logits)
        return self.logits + jnp.exp(self.log_std) * jax.random.normal(key, self.logits.shape)

    def log_prob(self, action):
        if self.log_std is None:
            return jnp.take_along_axis(jax.nn.log_softmax(self.logits), action[:, None], axis=-1).squeeze(-1)
        return jax.scipy.stats.norm.logpdf(action, self.logits, jnp.exp(self.log_std)).sum(-1)

    def entropy(self):
        if self.log_std is None:
            return -(jax.nn.softmax(self.logits) * jax.nn.log_softmax(self.logits)).sum(-1)
        return (0.5 + 0.5 * jnp.log(2 * jnp.pi) + self.log_std).sum(-1)  # the same in every state


# ---------------------------------------------------------------- rollout
class Transition(NamedTuple):  # one step of every env; a rollout's steps are stacked: (num_steps, num_envs, ...)
    obs: jax.Array
    action: jax.Array
    logprob: jax.Array
    reward: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    final_obs: jax.Array  # the observation reached before any auto-reset: its value bootstraps a truncation
    finished: "EpisodeStats"  # (below, for the log) the episodes that ended on this step (0 where none did)


class Runner(NamedTuple):
    agent: Agent  # the network with its parameters: a pytree like the rest of the runner
    opt_state: optax.OptState
    step: jax.Array  # gradient steps so far (Linen's TrainState.step): where the logged learning rate is read
    env_state: object
    obs: jax.Array
    episode: "EpisodeStats"  # (below) of each env's episode so far
    key: jax.Array


def step_envs(env, env_params, key, runner: Runner, action, logprob):
    """Step every env once (gymnax resets finished ones): the runner after the step, and the step's Transition."""
    keys = jax.random.split(key, action.shape[0])
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))  # one key, state and action per env; the same params
    obs, env_state, reward, terminated, truncated, info = step(keys, runner.env_state, action, env_params)
    episode, finished = count_episodes(runner.episode, reward, jnp.logical_or(terminated, truncated))  # (below)
    transition = Transition(runner.obs, action, logprob, reward, terminated, truncated, info["final_observation"], finished)
    return runner._replace(env_state=env_state, obs=obs, episode=episode), transition


def rollout(runner: Runner, env, env_params, num_steps: int):
    def step(runner: Runner, _):
        key, action_key, env_key = jax.random.split(runner.key, 3)
        policy = runner.agent.policy(runner.obs)
        action = policy.sample(action_key)  # continuous: unclipped (the environment clips it to its bounds)
        logprob = policy.log_prob(action)
        runner, transition = step_envs(env, env_params, env_key, runner, action, logprob)
        return runner._replace(key=key), transition

    return jax.lax.scan(step, runner, length=num_steps)


# ---------------------------------------------------------------- compute_gae
def compute_gae(rewards, values, bootstrap_values, terminated, truncated, gamma, gae_lambda):
    """GAE over (num_steps, num_envs) arrays, as a reverse scan. bootstrap_values[t] is V of the observation step t reached
    before any reset: a truncation is bootstrapped, only a termination cuts the value off; either ends the episode."""

    def backward(next_advantage, delta_and_discount):
        delta, discount = delta_and_discount
        advantage = delta + discount * next_advantage
        return advantage, advantage

    deltas = rewards + gamma * bootstrap_values * (1.0 - terminated.astype(jnp.float32)) - values
    discounts = gamma * gae_lambda * (1.0 - jnp.logical_or(terminated, truncated).astype(jnp.float32))
    _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[0]), (deltas, discounts), reverse=True)
    return advantages, advantages + values


# ---------------------------------------------------------------- ppo_loss
class Batch(NamedTuple):
    obs: jax.Array
    action: jax.Array
    logprob: jax.Array
    value: jax.Array
    advantage: jax.Array
    returns: jax.Array


def ppo_loss(policy: Policy, value, mb: Batch, args: Args):
    """Clipped surrogate + (clipped) value loss - entropy bonus, from the network's outputs."""
    entropy = policy.entropy().mean()
    logratio = policy.log_prob(mb.action) - mb.logprob
    ratio = jnp.exp(logratio)
    advantage = (mb.advantage - mb.advantage.mean()) / (mb.advantage.std() + 1e-8)
    pg_loss = jnp.maximum(-advantage * ratio, -advantage * jnp.clip(ratio, 1 - args.clip_coef, 1 + args.clip_coef)).mean()
    v_loss = (value - mb.returns) ** 2
    if args.clip_vloss:
        v_clipped = mb.value + jnp.clip(value - mb.value, -args.clip_coef, args.clip_coef)
        v_loss = jnp.maximum(v_loss, (v_clipped - mb.returns) ** 2)
    v_loss = 0.5 * v_loss.mean()
    loss = pg_loss - args.ent_coef * entropy + args.vf_coef * v_loss
    logratio, ratio = jax.lax.stop_gradient((logratio, ratio))
    return loss, {
        "policy_loss": pg_loss,
        "value_loss": v_loss,
        "entropy": entropy,
        "old_approx_kl": (-logratio).mean(),
        "approx_kl": ((ratio - 1) - logratio).mean(),
        "clipfrac": (jnp.abs(ratio - 1) > args.clip_coef).mean(),
    }


# ---------------------------------------------------------------- update
def update(runner: Runner, batch: Batch, tx: optax.GradientTransformation, args: Args):
    """update_epochs passes over the batch in shuffled minibatches: two nested scans."""

    def minibatch_step(carry, mb: Batch):
        agent, opt_state = carry

        def loss_fn(agent: Agent):
            policy, value = agent(mb.obs)
            return ppo_loss(policy, value, mb, args)

        (_, info), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(agent)
        updates, opt_state = tx.update(grads, opt_state, eqx.filter(agent, eqx.is_array))
        return (eqx.apply_updates(agent, updates), opt_state), info

    def epoch(carry, _):
        agent, opt_state, key = carry
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, batch.advantage.shape[0])
        minibatches = jax.tree.map(lambda x: x[perm].reshape(args.num_minibatches, -1, *x.shape[1:]), batch)
        (agent, opt_state), info = jax.lax.scan(minibatch_step, (agent, opt_state), minibatches)
        return (agent, opt_state, key), info

    carry = (runner.agent, runner.opt_state, runner.key)
    (agent, opt_state, key), info = jax.lax.scan(epoch, carry, length=args.update_epochs)
    step = runner.step + args.update_epochs * args.num_minibatches
    return runner._replace(agent=agent, opt_state=opt_state, step=step, key=key), jax.tree.map(jnp.mean, info)


# ---------------------------------------------------------------- train
def train(args: Args) -> dict:
    """Train, time every iteration, and return the result record."""
    start = time.perf_counter()
    hidden, device = check_args(args)  # (below) which also sets jax's device and matmul precision
    env, env_params = make_env(args.env_id)
    batch_size = args.num_envs * args.num_steps
    num_iterations = args.total_timesteps // batch_size

    # CleanRL anneals once per iteration: the rate is constant within an update (and throughout without annealing).
    schedule = optax.linear_schedule(args.learning_rate, 0.0 if args.anneal_lr else args.learning_rate, num_iterations)
    lr = lambda count: schedule(count // (args.update_epochs * args.num_minibatches))  # of the gradient steps taken
    tx = optax.chain(optax.clip_by_global_norm(args.max_grad_norm), optax.adam(lr, eps=1e-5))

    def init_runner(seed: int) -> Runner:
        """What one seed trains from: its agent, optimizer state, envs and keys."""
        key, init_key, reset_key = jax.random.split(jax.random.key(seed), 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, args.num_envs), env_params)
        env_state = strongly_typed(env_state)  # (below) so that a jitted step compiles once
        space = env.action_space(env_params)  # Discrete: a categorical policy; Box (continuous actions): a Gaussian one
        num_actions, continuous = (space.n, False) if hasattr(space, "n") else (space.shape[0], True)
        agent = Agent(int(np.prod(obs.shape[1:])), hidden, num_actions, continuous, key=init_key)
        opt_state = tx.init(eqx.filter(agent, eqx.is_array))
        episode = EpisodeStats(jnp.zeros(args.num_envs), jnp.zeros(args.num_envs, jnp.int32))
        return Runner(agent, opt_state, jnp.zeros((), jnp.int32), env_state, obs, episode, key)

    # Several seeds (--num-seeds): each starts as its own run would, its arrays stacked (below) on a leading axis that
    # eqx.filter_vmap maps every function over: one program trains them all. On the device now: no transfer when timed.
    runner = jax.device_put(stack_seeds([init_runner(args.seed + i) for i in range(args.num_seeds)]), device)

    def collect(runner: Runner, traj: Transition):
        """After the rollout: the critic, once over all its observations; GAE: the flat batch; the log's statistics."""
        obs = jnp.concatenate([traj.obs, traj.final_obs]).reshape(2 * batch_size, -1)
        values, next_values = runner.agent.value(obs).reshape(2, args.num_steps, -1)
        terminated = traj.terminated if args.bootstrap_truncation else jnp.logical_or(traj.terminated, traj.truncated)
        advantages, returns = compute_gae(
            traj.reward, values, next_values, terminated, traj.truncated, args.gamma, args.gae_lambda
        )
        batch = Batch(traj.obs, traj.action, traj.logprob, values, advantages, returns)
        batch = jax.tree.map(lambda x: x.reshape(batch_size, *x.shape[2:]), batch)
        return runner, batch, logged(traj, values, returns, lr(runner.step))  # (below) what the log shows

    # An iteration is the rollout, collect and update, compiled with eqx.filter_jit into one program: the harness (below)
    # composes them, vmapped over the seeds with --num-seeds, and as two programs timed apart with --sync-timing.
    run = compile_iteration(
        eqx.filter_jit,
        eqx.filter_vmap,
        rollout=lambda runner, num_steps: rollout(runner, env, env_params, num_steps),
        collect=collect,
        update=lambda runner, batch: update(runner, batch, tx, args),
        args=args,
    )
    log = Log(args, device, num_iterations, start)
    for iteration in range(num_iterations):
        with log.timed(iteration) as rollout_done:  # the harness's timer, and its checks that nothing syncs
            runner, metrics = run(runner, rollout_done)
        log.iteration(jax.device_get(metrics))
    return log.record(eqx.filter(runner.agent, eqx.is_array))


# ---------------------------------------------------------------- benchmark harness
# Everything below serves the benchmark, not PPO: input validation, the device, compile counting, logging and
# the JSON record (docs/record.md). Its imports are here, so that the top shows what PPO needs. It is the same in
# every script of one framework, but for the lines marked "# own" (tests/test_harness.py holds the copies so).
import contextlib
import importlib.metadata
import io
import json
import platform
import re
import resource
import subprocess

from jax._src.lib import cuda_versions  # the CUDA plugin's version queries (None without one)
from tensorboard.compat.proto.event_pb2 import Event
from tensorboard.plugins.text.summary_v2 import text_pb
from tensorboard.summary import Writer
from tensorboard.summary.writer.event_file_writer import EventFileWriter

VARIANT = os.path.basename(__file__)[: -len(".py")].removeprefix("ppo_")
# What benchmark.sh, plot.py and the tests know of this script, read from this line without running it
# (bench/variants.py): its framework, what compiles its iteration, its row and colour in tables and figures.
TOOLING = {  # own
    "framework": "jax",
    "compiles": "eqx.filter_jit",
    "order": 3,
    "color": "tab:red",
    # On a GPU, XLA waits on the host for a lax.while_loop's condition every trip unless while loops and conditionals
    # run in its command buffers (CUDA graphs), which are not among their default kinds (xla/debug_options_flags.cc:
    # FUSION, CUBLAS, CUBLASLT, CUSTOM_CALL, CUDNN; "+KIND" adds one to them): the gpu preset times that beside this.
    "gpu_environment": {
        "tag": "cmdbuf",
        "environment": "XLA_FLAGS=--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL",
        "color": "darkred",
    },
}


class UsageError(ValueError):
    """Bad input: reported in one line, exit code 2, nothing written."""


def make_env(env_id: str):
    """gymnax's environment and its parameters, or Craftax's from craftax_gymnax.py (imported for a Craftax id only)."""
    if env_id.startswith("Craftax"):
        import craftax_gymnax

        return craftax_gymnax.make(env_id)
    return gymnax.make(env_id)


class EpisodeStats(NamedTuple):  # per env: the return and length of its episode so far, or of one that just ended
    returns: jax.Array
    lengths: jax.Array


def count_episodes(episode: EpisodeStats, reward, done):
    """After a step: each env's episode so far (0 where one ended), and the episodes that ended (0 where none did)."""
    returns, lengths = episode.returns + reward, episode.lengths + 1
    finished = EpisodeStats(jnp.where(done, returns, 0.0), jnp.where(done, lengths, 0))
    return EpisodeStats(jnp.where(done, 0.0, returns), jnp.where(done, 0, lengths)), finished


def logged(traj, values, returns, learning_rate) -> dict:
    """What the log shows of an iteration, computed in its program: how many episodes ended, their returns and lengths
    summed, the learning rate, and how much of the returns' variance the critic explains."""
    episodes, finished = jnp.logical_or(traj.terminated, traj.truncated).sum(), traj.finished
    stats = dict(episodes=episodes, return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())
    return stats | dict(learning_rate=learning_rate, explained_variance=1 - jnp.var(returns - values) / jnp.var(returns))


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
    """Validate everything before anything is built or written, then set jax's device and precision; returns
    (hidden, device)."""
    hidden = parse_hidden(args.hidden)
    for name in ("total_timesteps", "num_seeds", "num_envs", "num_steps", "num_minibatches", "update_epochs"):
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
    if args.rollout == "python" and args.num_seeds > 1:
        raise UsageError("--rollout python steps one seed; it does not combine with --num-seeds")
    supported = [e for e in gymnax.registered_envs if e != "MNISTBandit-bsuite"]  # that one downloads MNIST when built
    supported += ["Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1"]  # Craftax's symbolic ones (pixels: textures)
    if args.env_id not in supported:  # named with the ids it can train, by their kind of actions
        kinds = {"discrete": [], "continuous": []}
        for e in supported:
            kinds[action_space(e)["kind"]].append(e)
        ids = "; ".join(f"{kind}-action ids: {', '.join(ids)}" for kind, ids in kinds.items())
        raise UsageError(f"unsupported --env-id {args.env_id!r}; {ids}")
    device = jax.devices()[0] if args.cuda else jax.devices("cpu")[0]  # the GPU if jax sees one
    if args.cuda and device.platform == "cpu":
        print("no GPU visible to jax: running on the CPU", file=sys.stderr)
    if args.matmul_precision == "high" and device.platform == "cpu":
        raise UsageError("--matmul-precision high (TF32) needs an NVIDIA GPU: on CPUs only highest is the same arithmetic")
    jax.config.update("jax_default_device", device)
    # torch's names for XLA's: the same arithmetic in both frameworks (docs/usage.md, "Flags")
    jax.config.update("jax_default_matmul_precision", {"highest": "highest", "high": "tensorfloat32"}[args.matmul_precision])
    return hidden, device


def stack_seeds(runners: list):  # own
    """One seed's runner, or several stacked on a leading axis: their arrays (what is not an array is shared)."""
    stack = lambda *leaves: jnp.stack(leaves) if eqx.is_array(leaves[0]) else leaves[0]
    return runners[0] if len(runners) == 1 else jax.tree.map(stack, *runners)


def compile_iteration(jit, vmap, rollout, collect, update, args: Args):
    """run(runner, rollout_done) -> (runner, metrics), waited for: PPO's iteration as the loop runs it. Its parts take
    the models their framework passes (NNX's modules; none elsewhere), then the runner: rollout(..., runner,
    num_steps) -> (runner, traj), collect(..., runner, traj) -> (runner, batch, stats), update(..., runner, batch) ->
    (runner, losses). One program, compiled by `jit` and mapped by `vmap` over the --num-seeds seeds; with
    --sync-timing two, the rollout with collect and the update, rollout_done ending the first's phase. With --rollout
    python, a rollout of one step (XLA drops a scan of one trip) is compiled and called from Python a step at a time,
    as the torch scripts step it, and its steps go to the rest of the iteration."""
    compiled = lambda f: jit(vmap(f) if args.num_seeds > 1 else f)
    python = args.rollout == "python"

    def rollout_and_collect(*inputs):  # (*models, runner), or with --rollout python (*models, runner, steps)
        *models, runner, steps = inputs if python else (*inputs, None)
        if python:  # one array per field, as the scan stacks them
            return collect(*models, runner, jax.tree.map(lambda *xs: jnp.concatenate(xs), *steps))
        return collect(*models, *rollout(*models, runner, args.num_steps))

    def updated(*inputs):  # (*models, runner, batch): update under a name of its own, which its program takes
        return update(*inputs)

    def collect_and_update(*inputs):
        runner, batch, stats = rollout_and_collect(*inputs)
        runner, losses = update(*inputs[: -2 if python else -1], runner, batch)
        return runner, {**stats, **losses}

    step = compiled(lambda *inputs: rollout(*inputs, 1)) if python else None
    first, second, whole = compiled(rollout_and_collect), compiled(updated), compiled(collect_and_update)

    def run(runner, rollout_done):
        inputs = (runner,)
        if python:
            steps = []
            for _ in range(args.num_steps):
                runner, traj = step(runner)
                steps.append(traj)
            inputs = (runner, steps)
        if not args.sync_timing:
            return jax.block_until_ready(whole(*inputs))
        runner, batch, stats = rollout_done(first(*inputs))
        runner, losses = jax.block_until_ready(second(runner, batch))
        return runner, {**stats, **losses}

    return run


def gpu_info(device) -> Optional[dict]:
    """What a GPU result needs to be read, as jax reports it (the driver as nvidia-smi does); None on the CPU."""
    if device.platform == "cpu":
        return None
    version = lambda name: getattr(cuda_versions, name, lambda: None)() if cuda_versions else None
    cuda = {"cuda_runtime": version("cuda_runtime_get_version"), "cudnn": version("cudnn_get_version")}
    jax_info = {"device_kind": device.device_kind, "platform_version": device.client.platform_version, **cuda}
    driver = run_quietly("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")  # a line per GPU
    jax_peak = (device.memory_stats() or {}).get("peak_bytes_in_use")  # XLA's allocator: its buffers' peak
    peak = {"jax": jax_peak and jax_peak / 2**20}
    return {"name": device.device_kind, "driver": driver and driver.split()[0], "jax": jax_info, "peak_memory_mb": peak}


LIBRARIES = ("jax", "jaxlib", "equinox", "flax", "optax", "gymnax", "numpy")  # own: the versions the record holds
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

HOST_TO_DEVICE = "disallow"  # own: what the timed iterations may send to the device (jit folds in constants)


class Log:
    """The untimed bookkeeping of the iterations: plan and progress lines, TensorBoard, the JSON record."""

    def __init__(self, args: Args, device, num_iterations: int, start: float):
        self.args, self.device, self.num_iterations, self.start = args, device, num_iterations, start
        self.commit = run_quietly("git", "rev-parse", "HEAD")  # now, not at the end: the checkout may move
        self.durations, self.phases, self.finished = [], [], []
        run = f"runs/{args.env_id}__{args.exp_name}__{args.seed}__{int(time.time())}"
        self.writer = Writer(run) if args.tensorboard else None
        if self.writer:  # the hyperparameters as a text summary, as CleanRL writes them
            table = "\n".join(["|param|value|", "|-|-|", *(f"|{k}|{v}|" for k, v in dataclasses.asdict(args).items())])
            text = EventFileWriter(run)
            text.add_event(Event(wall_time=time.time(), step=0, summary=text_pb("hyperparameters", table)))
            text.close()
        if not args.quiet:
            plan = f"{num_iterations} iterations of {args.num_envs} envs x {args.num_steps} steps"
            print(f"{VARIANT} on {device}: {args.env_id}, hidden {args.hidden}, {plan}")
        self.setup_duration = time.perf_counter() - start

    @contextlib.contextmanager
    def timed(self, iteration: int):
        """Time one iteration, to the wait that ends it (compile_iteration's run waits for its outputs); inside,
        `rollout_done(outputs)` waits for the rollout's outputs and ends its phase (--sync-timing). An implicit transfer
        (a hidden sync) fails the run instead of slowing it: between devices, to the device unless HOST_TO_DEVICE
        allows it, and back to the host after iteration 0, which compiling does (closed-over constants, such as
        gymnax's MinAtar tables)."""
        split = []

        def rollout_done(outputs):
            outputs = jax.block_until_ready(outputs)
            split.append(time.perf_counter())
            return outputs

        t0 = time.perf_counter()
        with (
            jax.transfer_guard_host_to_device(HOST_TO_DEVICE),
            jax.transfer_guard_device_to_device("disallow"),
            jax.transfer_guard_device_to_host("disallow" if iteration else "allow"),
        ):
            yield rollout_done
        end = time.perf_counter()
        self.durations.append(end - t0)
        self.phases.append((split[0] - t0, end - split[0]) if split else None)

    def iteration(self, metrics: dict):
        """The iteration just timed. metrics: a number each, or a number per seed (--num-seeds); shown as the mean over
        seeds."""
        self.finished.append((np.atleast_1d(metrics["return_sum"]), np.atleast_1d(metrics["episodes"])))  # per seed
        metrics = {
            name: np.sum(value) if name in ("episodes", "return_sum", "length_sum") else np.mean(value)
            for name, value in metrics.items()
        }
        episodes = int(metrics["episodes"])
        mean_return = float(metrics["return_sum"]) / episodes if episodes else None
        done = len(self.durations)
        step = done * self.args.num_envs * self.args.num_steps
        sps = int(step * len(self.finished[-1][0]) / sum(self.durations))  # the steps of every seed
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

    def record(self, params) -> dict:
        """The JSON record (schema 2, README "The record") of a run that trained `params` (every seed's)."""
        if self.writer:
            self.writer.close()
        libraries = LIBRARIES + ("craftax",) * self.args.env_id.startswith("Craftax")
        args = self.args
        returns, episodes = (np.array(x, dtype=float) for x in zip(*self.finished))  # (iterations, seeds) each
        per_iteration = [[float(r / n) if n else None for r, n in zip(*seed)] for seed in zip(returns.T, episodes.T)]
        last = [(r[-10:].sum(), n[-10:].sum()) for r, n in zip(returns.T, episodes.T)]
        final = [float(r / n) if n else None for r, n in last]
        one = args.num_seeds == 1  # one seed: a list of numbers; several: a list per seed
        gpu = gpu_info(self.device)
        return {
            "schema_version": 2,
            "variant": VARIANT,
            "status": "ok",
            **{name: getattr(args, name) for name in ("env_id", "seed", "matmul_precision", "sync_timing")},  # also in args
            "env_backend": "gymnax",
            "action_space": action_space(args.env_id),
            "normalization": None,  # observations and rewards as the environment gives them, in every variant
            "rollout": args.rollout,  # own: scan, or python (a Python loop over the steps)
            "hidden": list(parse_hidden(args.hidden)),
            "args": dataclasses.asdict(args),
            "device": gpu["name"] if gpu else "cpu",
            "devices": {"jax": str(self.device)},
            "gpu": gpu,
            "host": platform.node(),
            "cpu": cpu_info(),
            "xla_flags": os.environ.get("XLA_FLAGS"),  # XLA's options (its CPU threads, a GPU's command buffers)
            "peak_host_memory_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,  # Linux counts KiB
            "versions": {"python": platform.python_version(), **{n: importlib.metadata.version(n) for n in libraries}},
            "git_commit": self.commit,
            "param_count": sum(x.size for x in jax.tree.leaves(params)) // args.num_seeds,  # one seed's
            "env_steps": len(self.durations) * args.num_envs * args.num_steps,
            "grad_steps": self.num_iterations * args.update_epochs * args.num_minibatches,
            "setup_duration": self.setup_duration,
            "iteration_durations": self.durations,
            "rollout_durations": [phases[0] for phases in self.phases] if args.sync_timing else None,
            "update_durations": [phases[1] for phases in self.phases] if args.sync_timing else None,
            "total_duration": time.perf_counter() - self.start,
            "compiles_after_first_iteration": len(COMPILES) - self.compiles_after_first,
            "caches": compiler_caches(),
            "episodic_return": per_iteration[0] if one else per_iteration,
            "final_return": final[0] if one else final,
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
    program a miss compiled and wrote (jax/_src/compilation_cache.py: get_executable_and_time deserializes the
    executable put_executable_and_time serialized), so only the compile time differs."""
    return {"persistent": jax.config.jax_compilation_cache_dir is not None, "jax": dict(JAX_CACHE)}


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
