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
import jax
import jax.numpy as jnp
import numpy as np
import optax

from benchback import checks, cli, compiles, gymnax_envs, jax_study, record


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
    num_seeds: int = 1
    """train seeds seed .. seed+num_seeds-1 at once: one compiled program, vmapped over a leading seed axis"""
    configs: Optional[str] = None
    """a JSON file of configurations ([{"learning_rate": 0.001, "gamma": 0.98}, ...]) trained at once from --seed, vmapped"""
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
    finished: gymnax_envs.EpisodeStats  # (for the log) the episodes that ended on this step (0 where none did)


class Carry(NamedTuple):  # what one iteration hands the next: the agent and optimizer state, the envs, the keys
    agent: Agent  # the network with its parameters: a pytree like the rest of the carry
    opt_state: optax.OptState
    step: jax.Array  # gradient steps so far (Linen's TrainState.step): where the record.logged learning rate is read
    env_state: object
    obs: jax.Array
    episode: gymnax_envs.EpisodeStats  # of each env's episode so far
    key: jax.Array


def rollout(carry: Carry, env, env_params, num_steps: int):
    def env_step(carry: Carry, _):
        """Act with the actor alone, then step every env (gymnax resets finished ones): the carry and the Transition."""
        key, action_key, env_key = jax.random.split(carry.key, 3)
        policy = carry.agent.policy(carry.obs)
        action = policy.sample(action_key)  # continuous: unclipped, and clipped to the bounds for the step alone
        logprob = policy.log_prob(action)
        step = jax.vmap(env.step, in_axes=(0, 0, 0, None))  # one key, state and action per env; the same params
        keys = jax.random.split(env_key, action.shape[0])
        env_action = gymnax_envs.clipped(env.action_space(env_params), action)
        obs, env_state, reward, terminated, truncated, info = step(keys, carry.env_state, env_action, env_params)
        episode, finished = gymnax_envs.count_episodes(carry.episode, reward, jnp.logical_or(terminated, truncated))
        transition = Transition(carry.obs, action, logprob, reward, terminated, truncated, info["final_observation"], finished)
        return carry._replace(env_state=env_state, obs=obs, episode=episode, key=key), transition

    return jax.lax.scan(env_step, carry, length=num_steps)


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
def update(carry: Carry, batch: Batch, tx: optax.GradientTransformation, args: Args):
    """update_epochs passes over the batch in shuffled minibatches: two nested scans."""

    def minibatch_step(scanned, mb: Batch):
        agent, opt_state = scanned

        def loss_fn(agent: Agent):
            policy, value = agent(mb.obs)
            return ppo_loss(policy, value, mb, args)

        (_, info), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(agent)
        updates, opt_state = tx.update(grads, opt_state, eqx.filter(agent, eqx.is_array))
        return (eqx.apply_updates(agent, updates), opt_state), info

    def epoch(scanned, _):
        agent, opt_state, key = scanned
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, batch.advantage.shape[0])
        minibatches = jax.tree.map(lambda x: x[perm].reshape(args.num_minibatches, -1, *x.shape[1:]), batch)
        (agent, opt_state), info = jax.lax.scan(minibatch_step, (agent, opt_state), minibatches)
        return (agent, opt_state, key), info

    scanned = (carry.agent, carry.opt_state, carry.key)
    (agent, opt_state, key), info = jax.lax.scan(epoch, scanned, length=args.update_epochs)
    step = carry.step + args.update_epochs * args.num_minibatches
    return carry._replace(agent=agent, opt_state=opt_state, step=step, key=key), jax.tree.map(jnp.mean, info)


# ---------------------------------------------------------------- train
def train(args: Args) -> dict:
    """Set up, then one loop over the iterations, each one jitted program: rollout, the batch, update. The record."""
    start = time.perf_counter()
    hidden, device = check_args(args)  # (below) which also sets jax's device and matmul precision
    compiles.count_compiles()  # from here on, each XLA compilation is counted (the record's compiles after iteration 0)
    env, env_params = gymnax_envs.make(args.env_id)
    batch_size = args.num_envs * args.num_steps
    num_iterations = args.total_timesteps // batch_size

    space = env.action_space(env_params)  # Discrete: a categorical policy; Box (continuous actions): a Gaussian one
    num_actions, continuous = (space.n, False) if hasattr(space, "n") else (space.shape[0], True)

    # CleanRL anneals once per iteration: the rate is constant within an update (and throughout without annealing).
    anneal = lambda rate: optax.linear_schedule(rate, 0.0 if args.anneal_lr else rate, num_iterations)
    lr = lambda rate, count: anneal(rate)(count // (args.update_epochs * args.num_minibatches))  # count: gradient steps
    adam = lambda rate: optax.adam(lambda count: lr(rate, count), eps=1e-5)
    make_tx = lambda learning_rate: optax.chain(optax.clip_by_global_norm(args.max_grad_norm), adam(learning_rate))
    tx = make_tx(args.learning_rate)
    if args.configs:  # a search's batch: optax reads each configuration's learning rate from its optimizer state
        tx = optax.inject_hyperparams(make_tx)(learning_rate=args.learning_rate)

    def init(seed: int, learning_rate: float = args.learning_rate):
        """What one seed trains from (a search's configuration, at its learning rate): model, optimizer, envs, keys."""
        key, init_key, reset_key = jax.random.split(jax.random.key(seed), 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, args.num_envs), env_params)
        env_state = gymnax_envs.strongly_typed(env_state)  # so that a jitted step compiles once
        agent = Agent(int(np.prod(obs.shape[1:])), hidden, num_actions, continuous, key=init_key)
        opt_state = tx.init(eqx.filter(agent, eqx.is_array))
        if args.configs:  # a search's batch: this configuration's learning rate, in optax's inject_hyperparams state
            opt_state = jax_study.at_learning_rate(opt_state, learning_rate)
        episode = gymnax_envs.EpisodeStats(jnp.zeros(args.num_envs), jnp.zeros(args.num_envs, jnp.int32))
        return Carry(agent, opt_state, jnp.zeros((), jnp.int32), env_state, obs, episode, key)

    # Several seeds (--num-seeds): each starts as its own run would, stacked (below) on a leading axis that vmap maps
    # every function over (their state included): one program trains them all. On the device: no transfer when timed.
    # A search's batch (--configs) stacks its configurations the same way, each from --seed at its learning rate.
    if args.configs:
        starts = [init(args.seed, c.get("learning_rate", args.learning_rate)) for c in checks.read_configs(args)]
    else:
        starts = [init(args.seed + i) for i in range(args.num_seeds)]
    carry = jax.device_put(stack_seeds(starts), device)

    def make_batch(carry: Carry, traj: Transition, args: Args):
        """After the rollout: the critic, once over all its observations; GAE: the flat batch; the log's statistics."""
        obs = jnp.concatenate([traj.obs, traj.final_obs]).reshape(2 * batch_size, -1)
        values, next_values = carry.agent.value(obs).reshape(2, args.num_steps, -1)
        terminated = traj.terminated if args.bootstrap_truncation else jnp.logical_or(traj.terminated, traj.truncated)
        advantages, returns = compute_gae(
            traj.reward, values, next_values, terminated, traj.truncated, args.gamma, args.gae_lambda
        )
        batch = Batch(traj.obs, traj.action, traj.logprob, values, advantages, returns)
        batch = jax.tree.map(lambda x: x.reshape(batch_size, *x.shape[2:]), batch)
        return carry, batch, record.logged(traj, values, returns, lr(args.learning_rate, carry.step))

    def iteration(carry: Carry, args: Args = args):  # (a search's batch gives each configuration its own args)
        carry, traj = rollout(carry, env, env_params, args.num_steps)
        carry, batch, stats = make_batch(carry, traj, args)
        carry, losses = update(carry, batch, tx, args)
        return carry, {**stats, **losses}

    # The whole iteration, one XLA program: traced and compiled on its first call, then run as is.
    iterate = eqx.filter_jit(iteration)
    log = record.Log(args, VARIANT, {"jax": device}, LIBRARIES, num_iterations, start)
    if args.num_seeds > 1 or args.sync_timing or args.rollout == "python":  # the studies' ways of running its parts
        parts = (
            lambda carry, n: rollout(carry, env, env_params, n),
            lambda carry, traj: make_batch(carry, traj, args),
            lambda carry, batch: update(carry, batch, tx, args),
        )
        iterate = jax_study.study_iteration(eqx.filter_jit, eqx.filter_vmap, *parts, args, log)
    if args.configs:
        iterate = jax_study.config_iteration(eqx.filter_jit, eqx.filter_vmap, iteration, args)
    for i in range(num_iterations):
        with log.timed(no_syncs(i)):  # (below) an implicit transfer inside fails the run
            carry, metrics = jax.block_until_ready(iterate(carry))  # JAX dispatches asynchronously: wait for the outputs
        log.iteration(jax.device_get(metrics))  # to the host, after the timer
    return log.record(eqx.filter(carry.agent, eqx.is_array))


# ======================================================================================== benchmark harness
# Not PPO: what measures it. What every script does alike is in benchback/; here is JAX's own: its device, its guards.
import contextlib

VARIANT = cli.variant_of(__file__)
# What benchmark.sh, plot.py and the tests know of this script, read without running it (bench/variants.py).
TOOLING = {
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
LIBRARIES = ("jax", "jaxlib", "equinox", "flax", "optax", "gymnax", "numpy")  # the versions the record holds
HOST_TO_DEVICE = "disallow"  # what the timed iterations may send to the device (jit folds in constants)


def check_args(args: Args):
    """Validate everything before anything is built or written (benchback/checks.py), then set jax's device and precision;
    returns (hidden, device)."""
    hidden = checks.check_ppo_args(args)
    if args.rollout == "python" and args.num_seeds > 1:
        raise checks.UsageError("--rollout python steps one seed; it does not combine with --num-seeds")
    device = jax.devices()[0] if args.cuda else jax.devices("cpu")[0]  # the GPU if jax sees one
    if args.matmul_precision == "high" and device.platform == "cpu":
        raise checks.UsageError(
            "--matmul-precision high (TF32) needs an NVIDIA GPU: on CPUs only highest is the same arithmetic"
        )
    if args.cuda and device.platform == "cpu":
        print("no GPU visible to jax: running on the CPU", file=sys.stderr)
    jax.config.update("jax_default_device", device)
    # torch's names for XLA's: the same arithmetic in both frameworks (docs/usage.md, "Flags")
    jax.config.update("jax_default_matmul_precision", {"highest": "highest", "high": "tensorfloat32"}[args.matmul_precision])
    return hidden, device


def stack_seeds(carries: list):
    """One seed's carry, or several stacked on a leading axis: their arrays (what is not an array is shared)."""
    stack = lambda *leaves: jnp.stack(leaves) if eqx.is_array(leaves[0]) else leaves[0]
    return carries[0] if len(carries) == 1 else jax.tree.map(stack, *carries)


def no_syncs(iteration: int):
    """What a timed iteration may not do: an implicit transfer (a hidden sync) fails the run instead of slowing it,
    between devices, to the device unless HOST_TO_DEVICE allows it, and back to the host after iteration 0, which
    compiling does (closed-over constants, such as gymnax's MinAtar tables)."""
    guards = contextlib.ExitStack()
    guards.enter_context(jax.transfer_guard_host_to_device(HOST_TO_DEVICE))
    guards.enter_context(jax.transfer_guard_device_to_device("disallow"))
    guards.enter_context(jax.transfer_guard_device_to_host("disallow" if iteration else "allow"))
    return guards


if __name__ == "__main__":
    sys.exit(cli.main(Args, train))
