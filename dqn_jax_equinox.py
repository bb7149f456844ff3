"""DQN on gymnax with Equinox, one `eqx.filter_jit` per iteration.

Read it beside CleanRL's dqn.py: the same Args and DQN details (an MLP Q-network, epsilon-greedy actions with epsilon
falling linearly, a replay buffer, one gradient step every train_frequency steps, the target network copied every
target_network_frequency steps), but the replay buffer is preallocated arrays in the carried state, as purejaxql keeps
it, and an iteration's environment steps with their updates are one XLA program (`lax.scan` over groups of
train_frequency steps: act, step the envs, store; then sample and update). The random steps before learning_starts are
one program of their own, timed apart. A Python loop over iterations times each one and writes a JSON record.
Beside dqn_jax_linen.py (the same arithmetic in Flax Linen): the network is an `eqx.Module`, a pytree holding its own
parameters, so the network is what the scans carry, what `eqx.filter_grad` differentiates, optax updates.

    python dqn_jax_equinox.py --env-id CartPole-v1 --total-timesteps 50000
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
    configs: Optional[str] = None
    """a JSON file of configurations ([{"learning_rate": 0.001, "gamma": 0.98}, ...]) trained at once from --seed, vmapped"""
    matmul_precision: Literal["highest", "high"] = "highest"
    """float32 matmul precision: highest = float32 in every framework; high = TF32 on an NVIDIA GPU"""
    json_out: Optional[str] = None
    """write the result record (JSON, schema 2) to this path"""
    quiet: bool = False
    """print no progress line per iteration"""


# ---------------------------------------------------------------- network
def linears(ins: Sequence[int], outs: Sequence[int], key) -> tuple:
    """eqx.nn.Linear layers (each acts on one example: jax.vmap batches them) in Equinox's default init, what CleanRL's
    DQN leaves torch's nn.Linear (its default) and dqn_jax_linen.py draws: weights and biases uniform in +-1/sqrt(fan_in)."""
    return tuple(eqx.nn.Linear(i, o, key=k) for i, o, k in zip(ins, outs, jax.random.split(key, len(outs))))


class QNetwork(eqx.Module):  # one Q-value per action, from the flattened observation
    layers: tuple  # Linen's Dense_0, Dense_1, ...; the last one to the actions' Q-values

    def __init__(self, obs_dim: int, hidden: Sequence[int], num_actions: int, key):
        self.layers = linears((obs_dim, *hidden), (*hidden, num_actions), key)

    def __call__(self, obs):
        x = obs.reshape(obs.shape[0], -1)
        for layer in self.layers[:-1]:
            x = jax.nn.relu(jax.vmap(layer)(x))
        return jax.vmap(self.layers[-1])(x)


# ---------------------------------------------------------------- replay buffer
class Transitions(NamedTuple):  # one env step's transition per row: a sampled batch, or the buffer's data
    obs: jax.Array
    action: jax.Array  # int32
    reward: jax.Array
    next_obs: jax.Array  # the observation reached before any auto-reset: a truncation is bootstrapped from it
    terminated: jax.Array  # float: 1.0 where the episode terminated (not where it was truncated)


class Buffer(NamedTuple):  # preallocated and circular: `data`'s next rows are pos, pos + 1, ...; its first `size` are full
    data: Transitions
    pos: jax.Array
    size: jax.Array


def make_buffer(capacity: int, obs_shape: tuple) -> Buffer:
    zeros = lambda *shape, dtype=jnp.float32: jnp.zeros((capacity, *shape), dtype)
    data = Transitions(zeros(*obs_shape), zeros(dtype=jnp.int32), zeros(), zeros(*obs_shape), zeros())
    return Buffer(data, jnp.int32(0), jnp.int32(0))


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


# ---------------------------------------------------------------- loss
def q_loss(q_network: QNetwork, batch: Transitions, target):
    """The mean squared error of the taken actions' Q-values to the target."""
    q = q_network(batch.obs)
    q_action = jnp.take_along_axis(q, batch.action[:, None], axis=1).squeeze(1)
    loss = ((q_action - target) ** 2).mean()
    return loss, dict(q_values=q_action.mean(), td_loss=loss)


# ---------------------------------------------------------------- update
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


class Learner(NamedTuple):  # the Q network with its optimizer, and its target
    q: TrainState  # params: a QNetwork; q.step counts the gradient steps
    target_params: QNetwork


def update(learner: Learner, batch: Transitions, args: Args):
    """One Adam step toward the TD target (reward + gamma * the target network's best Q at the next state, cut by
    termination; no gradient through it); then, every target_network_frequency steps of the envs, the target moves
    tau toward the Q network (tau 1: a copy)."""
    target_max = learner.target_params(batch.next_obs).max(-1)
    td_target = batch.reward + args.gamma * target_max * (1 - batch.terminated)
    grads, info = eqx.filter_grad(q_loss, has_aux=True)(learner.q.params, batch, td_target)
    q = learner.q.apply_gradients(grads=grads)
    moves = q.step % (args.target_network_frequency // args.train_frequency) == 0
    # CleanRL's tau * param + (1 - tau) * target: with tau 1 exactly the parameters, in every framework
    soft = lambda target, param: jnp.where(moves, args.tau * param + (1 - args.tau) * target, target)
    return Learner(q, jax.tree.map(soft, learner.target_params, q.params)), info  # a module's leaves are its arrays


# ---------------------------------------------------------------- train
class Carry(NamedTuple):  # what one iteration hands the next: the learner, the buffer, the envs, the keys
    learner: Learner
    buffer: Buffer
    env_state: object
    obs: jax.Array
    episode: gymnax_envs.EpisodeStats  # of each env's episode so far
    step: jax.Array  # steps of the envs taken so far (each of num_envs), what epsilon falls with
    key: jax.Array


def epsilon(step, args: Args):
    """CleanRL's linear schedule: start_e to end_e over exploration_fraction of the run's steps, then end_e."""
    duration = args.exploration_fraction * args.total_timesteps / args.num_envs  # in steps of every env
    return jnp.maximum(args.start_e + (args.end_e - args.start_e) * step / duration, args.end_e)


def env_step(carry: Carry, env, env_params, random: bool, args: Args):
    """Act (random: uniformly; otherwise each env epsilon-greedy on the Q network), step every env (gymnax resets
    finished ones), store the transitions: the carry, and the episodes that ended."""
    key, explore_key, action_key, env_key = jax.random.split(carry.key, 4)
    n, num_actions = carry.obs.shape[0], env.action_space(env_params).n
    action = jax.random.randint(action_key, (n,), 0, num_actions)
    if not random:
        greedy = carry.learner.q.params(carry.obs).argmax(-1).astype(jnp.int32)
        explore = jax.random.uniform(explore_key, (n,)) < epsilon(carry.step, args)  # one draw per env
        action = jnp.where(explore, action, greedy)
    step_envs = jax.vmap(env.step, in_axes=(0, 0, 0, None))  # one key, state and action per env; the same params
    obs, env_state, reward, terminated, truncated, info = step_envs(
        jax.random.split(env_key, n), carry.env_state, action, env_params
    )
    episode, finished = gymnax_envs.count_episodes(carry.episode, reward, jnp.logical_or(terminated, truncated))
    obs, final_obs = obs.astype(jnp.float32), info["final_observation"].astype(jnp.float32)  # MinAtar's are bool
    transitions = Transitions(carry.obs, action, reward, final_obs, terminated.astype(jnp.float32))
    carry = Carry(carry.learner, store(carry.buffer, transitions), env_state, obs, episode, carry.step + 1, key)
    return carry, finished


METRICS = ("q_values", "td_loss")


def iteration_stats(finished: gymnax_envs.EpisodeStats, info: dict, grad_steps: int, eps) -> dict:
    """What the log shows of an iteration: the episodes that ended (count, returns and lengths summed), the losses
    averaged over its grad_steps gradient steps, and epsilon at its end."""
    stats = dict(episodes=(finished.lengths > 0).sum(), return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())
    return stats | {name: value.sum() / grad_steps for name, value in info.items()} | dict(epsilon=eps)


def train(args: Args) -> dict:
    """Set up; the random steps, one jitted program; then one loop over the iterations, each one jitted program of
    steps_per_iteration steps in groups of train_frequency: act, step, store; then sample and update. The record."""
    start = time.perf_counter()
    hidden, device = check_args(args)  # (below) which also sets jax's device and matmul precision
    compiles.count_compiles()  # from here on, each XLA compilation is counted (the record's compiles after iteration 0)
    env, env_params = gymnax_envs.make(args.env_id)
    random_steps = -(-args.learning_starts // args.num_envs)  # steps of every env, before learning starts
    num_iterations = (args.total_timesteps - random_steps * args.num_envs) // (args.num_envs * args.steps_per_iteration)
    grad_steps = num_iterations * (args.steps_per_iteration // args.train_frequency)

    tx = optax.adam(args.learning_rate)
    if args.configs:  # a search's batch: optax reads each configuration's learning rate from its optimizer state
        tx = optax.inject_hyperparams(optax.adam)(learning_rate=args.learning_rate)

    def init(seed: int, learning_rate: float = args.learning_rate) -> Carry:
        """What one seed trains from (a search's configuration, at its learning rate): networks, buffer, envs, keys."""
        key, init_key, reset_key = jax.random.split(jax.random.key(seed), 3)
        obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, args.num_envs), env_params)
        env_state = gymnax_envs.strongly_typed(env_state)  # so that a jitted step compiles once
        # Unlike Linen, Equinox builds the parameters in the constructor, so it needs the input sizes now.
        q_network = QNetwork(int(np.prod(obs.shape[1:])), hidden, env.action_space(env_params).n, init_key)
        q_state = TrainState.create(q_network, tx)
        if args.configs:  # a search's batch: this configuration's learning rate, in optax's inject_hyperparams state
            q_state = eqx.tree_at(lambda q: q.opt_state, q_state, jax_study.at_learning_rate(q_state.opt_state, learning_rate))
        learner = Learner(q_state, jax.tree.map(jnp.copy, q_network))  # the target starts as a copy
        buffer = make_buffer(args.buffer_size, obs.shape[1:])
        episode = gymnax_envs.EpisodeStats(jnp.zeros(args.num_envs), jnp.zeros(args.num_envs, jnp.int32))
        return Carry(learner, buffer, env_state, obs.astype(jnp.float32), episode, jnp.int32(0), key)

    # A search's batch (--configs): its configurations, each from --seed at its learning rate, stacked on a leading axis
    # that vmap maps every function over (their state included): one program trains them all.
    if args.configs:
        starts = [init(args.seed, c.get("learning_rate", args.learning_rate)) for c in checks.read_configs(args)]
    else:
        starts = [init(args.seed)]
    carry = jax.device_put(stack_seeds(starts), device)  # on the device: no transfer when timed

    def random_phase(carry: Carry, args: Args = args):  # (a search's batch gives each configuration its own args)
        """learning_starts steps of random actions, stored, without updates."""
        return jax.lax.scan(lambda carry, _: env_step(carry, env, env_params, True, args), carry, length=random_steps)

    def iteration(carry: Carry, args: Args = args):
        def steps_and_update(carry: Carry, _):
            carry, finished = jax.lax.scan(
                lambda carry, _: env_step(carry, env, env_params, False, args), carry, length=args.train_frequency
            )

            def gradient_step(_, looped):
                learner, key, info_sum = looped
                key, sample_key = jax.random.split(key)
                learner, info = update(learner, sample(carry.buffer, sample_key, args.batch_size), args)
                return learner, key, jax.tree.map(jnp.add, info_sum, info)

            # On a CPU, a trip count XLA cannot read, as in sac_jax_linen.py: given a count of 1 it would inline the
            # loop, fuse the stores above into the sample's gather, and then copy the whole buffer to keep the rows the
            # gather reads (python -m studies.buffer_copies counts such copies). On a GPU a loop of unknown count
            # reads its condition back to the host every trip (XLA's WhileThunk): there the count stays known.
            trips = 1
            if device.platform == "cpu":
                trips = jax.lax.optimization_barrier(jnp.int32(trips))
            zeros = dict.fromkeys(METRICS, jnp.float32(0))
            learner, key, info = jax.lax.fori_loop(0, trips, gradient_step, (carry.learner, carry.key, zeros))
            return carry._replace(learner=learner, key=key), (finished, info)

        groups = args.steps_per_iteration // args.train_frequency
        carry, (finished, info) = jax.lax.scan(steps_and_update, carry, length=groups)
        return carry, iteration_stats(finished, info, groups, epsilon(carry.step, args))

    # Each phase one XLA program, traced and compiled on its first call; the carry's buffers are reused (donated).
    # eqx.filter_jit traces the carry's arrays and holds the rest (the optimizer) static.
    run_random_phase, iterate = eqx.filter_jit(random_phase, donate="all"), eqx.filter_jit(iteration, donate="all")
    if args.configs:  # each phase mapped over the configurations, whose numbers are the program's first argument
        jit = lambda f: eqx.filter_jit(f, donate="all-except-first")
        run_random_phase, iterate = (
            jax_study.config_iteration(jit, eqx.filter_vmap, f, args) for f in (random_phase, iteration)
        )
    random_start = time.perf_counter()
    random_ended = None  # the episodes that ended among the random steps
    if random_steps:
        carry, random_ended = jax.block_until_ready(run_random_phase(carry))
    random_duration = time.perf_counter() - random_start  # its compilation included
    log = record.Log(args, VARIANT, {"jax": device}, LIBRARIES, num_iterations, start, args.steps_per_iteration, grad_steps)
    for i in range(num_iterations):
        with log.timed(no_syncs(i)):  # (below) an implicit transfer inside fails the run
            carry, metrics = jax.block_until_ready(iterate(carry))  # JAX dispatches asynchronously: wait for the outputs
        log.iteration(jax.device_get(metrics))  # to the host, after the timer
    fields = record.random_steps_fields(args, random_steps, random_duration, num_iterations, random_ended, "dqn")
    return log.record(eqx.filter(carry.learner.q.params, eqx.is_array), rollout="scan", extra=fields)


# ======================================================================================== benchmark harness
# Not DQN: what measures it. What every script does alike is in benchback/; here is JAX's own: its device and its guards against hidden transfers.
import contextlib

VARIANT = cli.variant_of(__file__)
# What the tools will know of this script, read from this line without running it (bench/variants.py).
TOOLING = {"framework": "jax", "compiles": "eqx.filter_jit", "order": 3, "color": "tab:red"}
LIBRARIES = ("jax", "jaxlib", "equinox", "flax", "optax", "gymnax", "numpy")  # the versions the record holds
HOST_TO_DEVICE = "disallow"  # what the timed iterations may send to the device (jit folds in constants)


def check_args(args: Args):
    """Validate everything before anything is built or written (benchback/checks.py), then set jax's device and precision;
    returns (hidden, device)."""
    hidden = checks.check_offpolicy_args(args, "DQN", actions="discrete")
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
