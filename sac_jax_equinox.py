"""SAC on gymnax with Equinox, one `eqx.filter_jit` per iteration.

Read it beside CleanRL's sac_continuous_action.py: the same Args and SAC details (two Q networks and their targets, a
tanh-squashed Gaussian actor, automatic entropy tuning), but the replay buffer is preallocated arrays in the carried
state, as rejax and purejaxql keep it, and an iteration's environment steps with their updates are one XLA program
(`lax.scan` over the steps: act, step the envs, store, sample, update). The random steps before learning_starts are
one program of their own, timed apart. A Python loop over iterations times each one and writes a JSON record.
Beside sac_jax_linen.py (the same arithmetic in Flax Linen): each network is an `eqx.Module`, a pytree holding its own
parameters, so the networks are what the scans carry, what `eqx.filter_value_and_grad` differentiates, optax updates.

    python sac_jax_equinox.py --env-id Pendulum-v1 --total-timesteps 15000 --learning-starts 1000
"""

import dataclasses
import os
import sys
import time
from typing import Literal, NamedTuple, Optional, Sequence

# On a GPU, XLA reads each cond's predicate back to the host (xla/backends/gpu/runtime/conditional_thunk.cc) unless
# conds run in its command buffers, CUDA graphs that branch on the device (docs/gpu.md); a CPU ignores the option.
os.environ.setdefault("XLA_FLAGS", "--xla_gpu_enable_command_buffer=+WHILE,+CONDITIONAL")

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

from benchback import checks, cli, compiles, gymnax_envs, record


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
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    json_out: Optional[str] = None
    """write the result record (JSON, schema 2) to this path"""
    quiet: bool = False
    """print no progress line per iteration"""


# ---------------------------------------------------------------- network
LOG_STD_MAX = 2
LOG_STD_MIN = -5


def linears(ins: Sequence[int], outs: Sequence[int], key) -> tuple:
    """eqx.nn.Linear layers (each acts on one example: jax.vmap batches them) in Equinox's default init, what CleanRL's
    SAC leaves torch's nn.Linear (its default) and sac_jax_linen.py draws: weights and biases uniform in +-1/sqrt(fan_in)."""
    return tuple(eqx.nn.Linear(i, o, key=k) for i, o, k in zip(ins, outs, jax.random.split(key, len(outs))))


class SoftQNetwork(eqx.Module):
    layers: tuple  # Linen's Dense_0, Dense_1, ...; the last one to the Q value

    def __init__(self, in_dim: int, hidden: Sequence[int], key):
        self.layers = linears((in_dim, *hidden), (*hidden, 1), key)

    def __call__(self, obs, action):
        x = jnp.concatenate([obs, action], -1)
        for layer in self.layers[:-1]:
            x = jax.nn.relu(jax.vmap(layer)(x))
        return jax.vmap(self.layers[-1])(x).squeeze(-1)


class Critic(eqx.Module):  # CleanRL's qf1 and qf2: two Q networks
    q1: SoftQNetwork
    q2: SoftQNetwork

    def __call__(self, obs, action):
        return self.q1(obs, action), self.q2(obs, action)


def tanh_gaussian(mean, log_std, noise, action_scale, action_bias):
    """CleanRL's get_action from the actor's outputs and standard normal noise: x = mean + std * noise (reparameterized),
    the action tanh(x) rescaled to the bounds, and its log-probability, the Normal's corrected for the squashing."""
    y = jnp.tanh(mean + jnp.exp(log_std) * noise)
    log_prob = -0.5 * noise**2 - log_std - 0.5 * np.log(2 * np.pi) - jnp.log(action_scale * (1 - y**2) + 1e-6)
    return y * action_scale + action_bias, log_prob.sum(-1)


class Actor(eqx.Module):
    layers: tuple  # Linen's Dense_0, Dense_1, ...: the hidden layers, then the mean's and the log std's
    action_scale: tuple = eqx.field(static=True)  # (high - low) / 2 per dimension
    action_bias: tuple = eqx.field(static=True)  # (high + low) / 2

    def __init__(self, obs_dim: int, hidden: Sequence[int], action_scale: tuple, action_bias: tuple, key):
        self.action_scale, self.action_bias = tuple(map(float, action_scale)), tuple(map(float, action_bias))  # floats
        self.layers = linears((obs_dim, *hidden, hidden[-1]), (*hidden, len(action_scale), len(action_scale)), key)

    def __call__(self, obs):
        x = obs
        for layer in self.layers[:-2]:
            x = jax.nn.relu(jax.vmap(layer)(x))
        mean, log_std = jax.vmap(self.layers[-2])(x), jnp.tanh(jax.vmap(self.layers[-1])(x))
        return mean, LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)  # From SpinUp / Denis Yarats

    def get_action(self, obs, noise):
        scale, bias = jnp.array(self.action_scale), jnp.array(self.action_bias)
        return tanh_gaussian(*self(obs), noise, scale, bias)


# ---------------------------------------------------------------- replay buffer
class Transitions(NamedTuple):  # one env step's transition per row: a sampled batch, or the buffer's data
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array  # the observation reached before any auto-reset: a truncation is bootstrapped from it
    terminated: jax.Array  # float: 1.0 where the episode terminated (not where it was truncated)


class Buffer(NamedTuple):  # preallocated and circular: `data`'s next rows are pos, pos + 1, ...; its first `size` are full
    data: Transitions
    pos: jax.Array
    size: jax.Array


def make_buffer(capacity: int, obs_dim: int, action_dim: int) -> Buffer:
    zeros = lambda *shape: jnp.zeros((capacity, *shape), jnp.float32)
    return Buffer(Transitions(zeros(obs_dim), zeros(action_dim), zeros(), zeros(obs_dim), zeros()), jnp.int32(0), jnp.int32(0))


def store(buffer: Buffer, transitions: Transitions) -> Buffer:
    """Write one step of every env at pos, wrapping around to the oldest rows."""
    capacity, n = buffer.data.reward.shape[0], transitions.reward.shape[0]
    rows = (buffer.pos + jnp.arange(n)) % capacity
    data = jax.tree.map(lambda stored, x: stored.at[rows].set(x), buffer.data, transitions)
    return Buffer(data, (buffer.pos + n) % capacity, jnp.minimum(buffer.size + n, capacity))


def sample(buffer: Buffer, key, batch_size: int) -> Transitions:
    """batch_size rows drawn uniformly, with replacement, from the full ones."""
    rows = jax.random.randint(key, (batch_size,), 0, buffer.size)
    return jax.tree.map(lambda stored: stored[rows], buffer.data)


def fill(buffer: Buffer) -> Buffer:
    """Every row full: the empty ones get copies of the stored ones, in order (--full-buffer)."""
    capacity = buffer.data.reward.shape[0]
    rows = jnp.arange(capacity) % buffer.size
    return buffer._replace(
        data=jax.tree.map(lambda stored: stored[rows], buffer.data), size=jnp.full_like(buffer.size, capacity)
    )


# ---------------------------------------------------------------- losses
class TrainState(eqx.Module):  # Linen's TrainState in Equinox: params (a model), its optax optimizer (static) and state
    params: object
    tx: optax.GradientTransformation = eqx.field(static=True)
    opt_state: optax.OptState
    step: jax.Array

    @staticmethod
    def create(model, tx: optax.GradientTransformation) -> "TrainState":
        return TrainState(model, tx, tx.init(eqx.filter(model, eqx.is_array)), jnp.int32(0))

    def apply_gradients(self, grads) -> "TrainState":
        updates, opt_state = self.tx.update(grads, self.opt_state, eqx.filter(self.params, eqx.is_array))
        return TrainState(eqx.apply_updates(self.params, updates), self.tx, opt_state, self.step + 1)


class Learner(NamedTuple):  # the networks, their optimizers and the entropy coefficient's
    actor: TrainState  # params: an Actor
    critic: TrainState  # both Q networks, a Critic; critic.step counts the gradient steps
    target_params: Critic  # the Q networks' targets
    log_alpha: TrainState  # params: {"log_alpha": a scalar}


def q_target(learner: Learner, batch: Transitions, noise, alpha, args: Args):
    """The soft TD target: reward + gamma * (min of the target Qs - alpha * log pi) at the next state, cut by termination."""
    next_action, next_log_pi = learner.actor.params.get_action(batch.next_obs, noise)
    q1, q2 = learner.target_params(batch.next_obs, next_action)
    return batch.reward + (1 - batch.terminated) * args.gamma * (jnp.minimum(q1, q2) - alpha * next_log_pi)


def q_loss(critic: Critic, batch: Transitions, target):
    """Both Q networks' mean squared error to the target, summed."""
    q1, q2 = critic(batch.obs, batch.action)
    qf1_loss, qf2_loss = ((q1 - target) ** 2).mean(), ((q2 - target) ** 2).mean()
    info = dict(qf1_values=q1.mean(), qf2_values=q2.mean(), qf1_loss=qf1_loss, qf2_loss=qf2_loss)
    return qf1_loss + qf2_loss, info | dict(qf_loss=(qf1_loss + qf2_loss) / 2)


def actor_loss(actor: Actor, critic: Critic, obs, noise, alpha):
    """alpha * log pi(a|s) - min Q(s, a), for a reparameterized a ~ pi(s)."""
    action, log_pi = actor.get_action(obs, noise)
    q1, q2 = critic(obs, action)
    return (alpha * log_pi - jnp.minimum(q1, q2)).mean()


def alpha_loss(alpha_params, log_pi, target_entropy):
    """Automatic entropy tuning: alpha rises while the policy's entropy (-log pi) is below the target."""
    return (-jnp.exp(alpha_params["log_alpha"]) * (log_pi + target_entropy)).mean()


# ---------------------------------------------------------------- update
def current_alpha(learner: Learner, args: Args):
    return jnp.exp(learner.log_alpha.params["log_alpha"]) if args.autotune else jnp.float32(args.alpha)


def update_critic(learner: Learner, batch: Transitions, noise, args: Args):
    """One Adam step of both Q networks toward the soft TD target (no gradient through it)."""
    target = q_target(learner, batch, noise, current_alpha(learner, args), args)
    grads, info = eqx.filter_grad(q_loss, has_aux=True)(learner.critic.params, batch, target)
    return learner._replace(critic=learner.critic.apply_gradients(grads=grads)), info


def update_actor(learner: Learner, obs, noise, alpha_noise, target_entropy, args: Args):
    """One Adam step of the actor against the Q networks; then, with autotune, one of log alpha on a fresh sample."""
    alpha = current_alpha(learner, args)
    loss, grads = eqx.filter_value_and_grad(actor_loss)(learner.actor.params, learner.critic.params, obs, noise, alpha)
    learner = learner._replace(actor=learner.actor.apply_gradients(grads=grads))
    info = dict(actor_loss=loss, alpha=alpha, alpha_loss=jnp.float32(0))
    if args.autotune:
        _, log_pi = learner.actor.params.get_action(obs, alpha_noise)
        loss, grads = jax.value_and_grad(alpha_loss)(learner.log_alpha.params, log_pi, target_entropy)
        learner = learner._replace(log_alpha=learner.log_alpha.apply_gradients(grads=grads))
        info |= dict(alpha_loss=loss)
    return learner, info


def update(learner: Learner, batch: Transitions, key, target_entropy, args: Args):
    """One gradient step, in CleanRL's order: the critic; every policy_frequency steps policy_frequency actor (and
    alpha) steps on the same batch; every target_network_frequency steps the targets move tau toward the critic."""
    grad_step = learner.critic.step
    critic_key, actor_key = jax.random.split(key)
    learner, info = update_critic(learner, batch, jax.random.normal(critic_key, batch.action.shape), args)

    def actor_steps(learner: Learner):
        def one(learner, key):
            noise, alpha_noise = jax.random.normal(key, (2, *batch.action.shape))
            return update_actor(learner, batch.obs, noise, alpha_noise, target_entropy, args)

        learner, actor_info = jax.lax.scan(one, learner, jax.random.split(actor_key, args.policy_frequency))
        return learner, jax.tree.map(jnp.mean, actor_info) | dict(actor_updated=jnp.float32(1))

    def no_actor_step(learner: Learner):
        return learner, dict(
            actor_loss=jnp.float32(0), alpha=jnp.float32(0), alpha_loss=jnp.float32(0), actor_updated=jnp.float32(0)
        )

    learner, actor_info = jax.lax.cond(grad_step % args.policy_frequency == 0, actor_steps, no_actor_step, learner)
    # torch's lerp_, not optax.incremental_update's tau * param + (1 - tau) * target: the same rounding in both
    lerp = lambda target, param: target + args.tau * (param - target)
    moved = jax.tree.map(lerp, learner.target_params, learner.critic.params)  # a Critic's leaves are its arrays
    target_params = jax.lax.cond(grad_step % args.target_network_frequency == 0, lambda: moved, lambda: learner.target_params)
    return learner._replace(target_params=target_params), info | actor_info


# ---------------------------------------------------------------- train
class Carry(NamedTuple):  # what one iteration hands the next: the learner, the buffer, the envs, the keys
    learner: Learner
    buffer: Buffer
    env_state: object
    obs: jax.Array
    episode: gymnax_envs.EpisodeStats  # of each env's episode so far
    key: jax.Array


def env_step(carry: Carry, env, env_params, random: bool):
    """Act (random: uniformly in the bounds; otherwise a sample of the actor), step every env (gymnax resets finished
    ones), store the transitions: the carry, and the episodes that ended."""
    key, action_key, env_key = jax.random.split(carry.key, 3)
    space = env.action_space(env_params)
    shape = (carry.obs.shape[0], *space.shape)
    if random:
        action = jax.random.uniform(action_key, shape, minval=space.low, maxval=space.high)
    else:
        action, _ = carry.learner.actor.params.get_action(carry.obs, jax.random.normal(action_key, shape))
    step_envs = jax.vmap(env.step, in_axes=(0, 0, 0, None))  # one key, state and action per env; the same params
    keys = jax.random.split(env_key, shape[0])
    obs, env_state, reward, terminated, truncated, info = step_envs(
        keys, carry.env_state, gymnax_envs.clipped(space, action), env_params
    )
    episode, finished = gymnax_envs.count_episodes(carry.episode, reward, jnp.logical_or(terminated, truncated))
    transitions = Transitions(carry.obs, action, reward, info["final_observation"], terminated.astype(jnp.float32))
    return Carry(carry.learner, store(carry.buffer, transitions), env_state, obs, episode, key), finished


METRICS = ("qf1_values", "qf2_values", "qf1_loss", "qf2_loss", "qf_loss", "actor_loss", "alpha", "alpha_loss", "actor_updated")
ACTOR_METRICS = ("actor_loss", "alpha", "alpha_loss")  # 0 in the gradient steps that leave the actor alone


def iteration_stats(finished: gymnax_envs.EpisodeStats, info: dict, grad_steps: int) -> dict:
    """What the log shows of an iteration: the episodes that ended (count, returns and lengths summed), the critic's
    losses averaged over its grad_steps gradient steps, and the actor's over the steps that updated it. `info` holds
    each env step's metrics summed over its gradient steps."""
    stats = dict(episodes=(finished.lengths > 0).sum(), return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())
    info = {name: value.sum() for name, value in info.items()}
    updated = info.pop("actor_updated")
    actor = {name: info.pop(name) / jnp.maximum(updated, 1) for name in ACTOR_METRICS}
    return stats | {name: value / max(grad_steps, 1) for name, value in info.items()} | actor


def train(args: Args) -> dict:
    """Set up; the random steps, one jitted program; then one loop over the iterations, each one jitted program of
    steps_per_iteration steps: act, step, store, and updates_per_step times sample and update. The record."""
    start = time.perf_counter()
    hidden, device = check_args(args)  # (below) which also sets jax's device and matmul precision
    compiles.count_compiles()  # from here on, each XLA compilation is counted (the record's compiles after iteration 0)
    env, env_params = gymnax_envs.make(args.env_id)
    space = env.action_space(env_params)
    low, high = (np.broadcast_to(np.asarray(x, np.float32), space.shape) for x in (space.low, space.high))
    random_steps = -(-args.learning_starts // args.num_envs)  # steps of every env, before learning starts
    num_iterations = (args.total_timesteps - random_steps * args.num_envs) // (args.num_envs * args.steps_per_iteration)
    grad_steps = num_iterations * args.steps_per_iteration * args.updates_per_step

    target_entropy = -float(np.prod(space.shape))

    def init(seed: int) -> Carry:
        key, init_key, reset_key = jax.random.split(jax.random.key(seed), 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, args.num_envs), env_params)
        env_state = gymnax_envs.strongly_typed(env_state)  # so that a jitted step compiles once
        actor_key, critic_key = jax.random.split(init_key)
        # Unlike Linen, Equinox builds the parameters in the constructor, so it needs the input sizes now.
        actor = Actor(obs.shape[-1], hidden, (high - low) / 2, (high + low) / 2, actor_key)
        critic = Critic(*(SoftQNetwork(obs.shape[-1] + space.shape[0], hidden, k) for k in jax.random.split(critic_key)))
        actor_state = TrainState.create(actor, optax.adam(args.policy_lr))
        critic_state = TrainState.create(critic, optax.adam(args.q_lr))
        log_alpha = TrainState.create({"log_alpha": jnp.float32(0)}, optax.adam(args.q_lr))
        learner = Learner(actor_state, critic_state, jax.tree.map(jnp.copy, critic), log_alpha)  # targets: a copy
        buffer = make_buffer(args.buffer_size, obs.shape[-1], space.shape[0])
        episode = gymnax_envs.EpisodeStats(jnp.zeros(args.num_envs), jnp.zeros(args.num_envs, jnp.int32))
        return Carry(learner, buffer, env_state, obs, episode, key)

    carry = jax.device_put(init(args.seed), device)  # on the device: no transfer when timed

    def random_phase(carry: Carry):
        """learning_starts steps of random actions, stored, without updates."""
        return jax.lax.scan(lambda carry, _: env_step(carry, env, env_params, random=True), carry, length=random_steps)

    def iteration(carry: Carry):
        def step_and_update(carry: Carry, _):
            carry, finished = env_step(carry, env, env_params, random=False)

            def gradient_step(_, looped):
                learner, key, info_sum = looped
                key, sample_key, update_key = jax.random.split(key, 3)
                batch = sample(carry.buffer, sample_key, args.batch_size)
                learner, info = update(learner, batch, update_key, target_entropy, args)
                return learner, key, jax.tree.map(jnp.add, info_sum, info)

            # On a CPU, a trip count XLA cannot read: given a count of 1 it would inline the loop, fuse the store above
            # into the sample's gather, and then copy the whole buffer every step to keep the rows the gather reads
            # (python -m studies.buffer_copies counts such copies). Not on a GPU, where a loop of unknown count reads
            # its condition back to the host every trip (XLA's WhileThunk): there the count stays known, a scan, and
            # studies.buffer_copies --cuda counts the copies. The metrics are summed: a loop of unknown count cannot
            # stack them.
            trips = args.updates_per_step
            if device.platform == "cpu":
                trips = jax.lax.optimization_barrier(jnp.int32(trips))
            zeros = dict.fromkeys(METRICS, jnp.float32(0))
            learner, key, info = jax.lax.fori_loop(0, trips, gradient_step, (carry.learner, carry.key, zeros))
            return carry._replace(learner=learner, key=key), (finished, info)

        carry, (finished, info) = jax.lax.scan(step_and_update, carry, length=args.steps_per_iteration)
        return carry, iteration_stats(finished, info, args.steps_per_iteration * args.updates_per_step)

    # Each phase one XLA program, traced and compiled on its first call; the carry's buffers are reused (donated).
    # eqx.filter_jit traces the carry's arrays and holds the rest (the optimizers, the action bounds) static.
    run_random_phase, iterate = eqx.filter_jit(random_phase, donate="all"), eqx.filter_jit(iteration, donate="all")
    random_start = time.perf_counter()
    random_ended = None  # the episodes that ended among the random steps
    if random_steps:
        carry, random_ended = jax.block_until_ready(run_random_phase(carry))
    if args.full_buffer:
        carry = carry._replace(buffer=fill(carry.buffer))  # before the timer, outside the jitted programs
    random_duration = time.perf_counter() - random_start  # its compilation included
    log = record.Log(args, VARIANT, {"jax": device}, LIBRARIES, num_iterations, start, args.steps_per_iteration, grad_steps)
    for i in range(num_iterations):
        with log.timed(no_syncs(i)):  # (below) an implicit transfer inside fails the run
            carry, metrics = jax.block_until_ready(iterate(carry))  # JAX dispatches asynchronously: wait for the outputs
        log.iteration(jax.device_get(metrics))  # to the host, after the timer
    trained = eqx.filter(
        (carry.learner.actor.params, carry.learner.critic.params, carry.learner.log_alpha.params), eqx.is_array
    )
    fields = record.random_steps_fields(args, random_steps, random_duration, num_iterations, random_ended)
    return log.record(trained, rollout="scan", extra=fields)


# ======================================================================================== benchmark harness
# Not SAC: what measures it. What every script does alike is in benchback/; here is JAX's own: its device and its guards against hidden transfers.
import contextlib

VARIANT = cli.variant_of(__file__)
# What the tools will know of this script, read from this line without running it (bench/variants.py).
TOOLING = {"framework": "jax", "compiles": "eqx.filter_jit", "order": 3, "color": "tab:red"}
LIBRARIES = ("jax", "jaxlib", "equinox", "flax", "optax", "gymnax", "numpy")  # the versions the record holds
HOST_TO_DEVICE = "disallow"  # what the timed iterations may send to the device (jit folds in constants)


def check_args(args: Args):
    """Validate everything before anything is built or written (benchback/checks.py), then set jax's device and precision;
    returns (hidden, device)."""
    hidden = checks.check_offpolicy_args(args, "SAC")
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
