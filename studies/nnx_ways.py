"""studies/nnx_modes.py's ways: what every way starts from at one size (Linen's parameters, the optimizer, the batch
and its minibatches), and each way to compile the update (Linen's, Equinox's and NNX's) at either granularity."""

import functools

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from flax.training.train_state import TrainState

from studies.same_start import with_layers

CALLS_PER_ITERATION = 80  # the scripts' update_epochs x num_minibatches (checked against their Args)
OBS_DIM, NUM_ACTIONS = 4, 2  # CartPole-v1's


# ---------------------------------------------------------------- what every way starts from
class Start:
    """At one size: the three scripts, the starting parameters (Linen's), the optimizer, the batch, its minibatches."""

    def __init__(self, scripts: dict, hidden: tuple, seed: int = 0):
        self.scripts, self.hidden = scripts, hidden
        L = scripts["linen"]
        self.args = L.Args()
        batch_size = self.args.num_envs * self.args.num_steps
        assert self.args.update_epochs * self.args.num_minibatches == CALLS_PER_ITERATION, "the scripts' update changed"
        # the scripts' optimizer: its learning rate annealed once per iteration of 80 gradient steps
        schedule = optax.linear_schedule(self.args.learning_rate, 0.0, self.args.total_timesteps // batch_size)
        lr = lambda count: schedule(count // CALLS_PER_ITERATION)
        self.tx = optax.chain(optax.clip_by_global_norm(self.args.max_grad_norm), optax.adam(lr, eps=1e-5))
        init_key, data_key, self.key = jax.random.split(jax.random.key(seed), 3)
        self.linen_agent = L.Agent(hidden, NUM_ACTIONS, False)
        self.params = self.linen_agent.init(init_key, jnp.zeros((1, OBS_DIM)))
        self.layers = {name: linen_layers(self.params, name) for name in ("actor", "critic")}
        self.batch = synthetic_batch(data_key, batch_size)
        self.minibatches = cut(self.batch, self.key, self.args.update_epochs, self.args.num_minibatches)


def synthetic_batch(key, n: int) -> tuple:
    """A rollout's worth of Batch fields (obs, action, logprob, value, advantage, returns), random but shaped and
    scaled as CartPole-v1's: the update's arithmetic does not depend on the values."""
    k = jax.random.split(key, 4)
    obs = jax.random.normal(k[0], (n, OBS_DIM))
    action = jax.random.randint(k[1], (n,), 0, NUM_ACTIONS)
    logprob = jnp.log(0.5) + 0.01 * jax.random.normal(k[2], (n,))  # a near-uniform policy's, as at the start
    value, advantage = jax.random.normal(k[3], (2, n))
    return jax.block_until_ready((obs, action, logprob, value, advantage, advantage + value))


def cut(batch: tuple, key, epochs: int, minibatches: int) -> list:
    """The 80 minibatches update() takes from `batch` with `key` (the same permutations), each on the device."""
    cuts = []
    for _ in range(epochs):
        key, perm_key = jax.random.split(key)
        perm = jax.random.permutation(perm_key, batch[0].shape[0])
        split = [x[perm].reshape(minibatches, -1, *x.shape[1:]) for x in batch]
        cuts += [tuple(x[i] for x in split) for i in range(minibatches)]
    return jax.block_until_ready(cuts)


def linen_layers(params, name: str) -> list:
    dense = params["params"][name]
    return [(dense[f"Dense_{i}"]["kernel"], dense[f"Dense_{i}"]["bias"]) for i in range(len(dense))]


def as_numpy(layers: list) -> list:
    return [np.asarray(x) for pair in layers for x in pair]


class Way:
    """One way at one granularity, with its own copy of the start: `iterate()` runs one iteration (80 minibatch
    updates) and returns what to wait for; `params()` the parameters now, as Linen's layers (kernel (in, out), bias)."""

    def __init__(self, iterate, params):
        self.iterate, self.params = iterate, params


# ---------------------------------------------------------------- Linen and Equinox
def linen_way(s: Start, granularity: str) -> Way:
    L = s.scripts["linen"]
    train_state = TrainState.create(apply_fn=s.linen_agent.apply, params=s.params, tx=s.tx)
    params = lambda state: as_numpy(linen_layers(state.params, "actor") + linen_layers(state.params, "critic"))
    if granularity == "per_call":

        def minibatch_step(train_state: TrainState, mb):  # update()'s, one minibatch
            def loss_fn(params):
                logits, value = s.linen_agent.apply(params, mb.obs)
                return L.ppo_loss(logits, value, mb, s.args)

            (_, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(train_state.params)
            return train_state.apply_gradients(grads=grads), info

        step, minibatches = jax.jit(minibatch_step), [L.Batch(*mb) for mb in s.minibatches]

        def iterate():
            nonlocal train_state
            for mb in minibatches:
                train_state, info = step(train_state, mb)
            return train_state, info

        return Way(iterate, lambda: params(train_state))

    runner = L.Carry(train_state, None, None, None, s.key)  # update() reads the train state and the key alone
    update, batch = jax.jit(lambda runner, batch: L.update(runner, batch, s.linen_agent, s.args)), L.Batch(*s.batch)

    def iterate():
        nonlocal runner
        runner, info = update(runner, batch)
        return runner, info

    return Way(iterate, lambda: params(runner.train_state))


def equinox_way(s: Start, granularity: str) -> Way:
    E = s.scripts["equinox"]
    agent = E.Agent(OBS_DIM, s.hidden, NUM_ACTIONS, False, key=jax.random.key(0))
    for name in ("actor", "critic"):
        agent = with_layers("jax_equinox", agent, name, s.layers[name])
    opt_state = s.tx.init(eqx.filter(agent, eqx.is_array))
    params = lambda agent: as_numpy([(x.weight.T, x.bias) for mlp in (agent.actor, agent.critic) for x in mlp.layers])
    if granularity == "per_call":

        def minibatch_step(agent, opt_state, mb):  # update()'s, one minibatch
            def loss_fn(agent):
                logits, value = agent(mb.obs)
                return E.ppo_loss(logits, value, mb, s.args)

            (_, info), grads = eqx.filter_value_and_grad(loss_fn, has_aux=True)(agent)
            updates, opt_state = s.tx.update(grads, opt_state, eqx.filter(agent, eqx.is_array))
            return eqx.apply_updates(agent, updates), opt_state, info

        step, minibatches = eqx.filter_jit(minibatch_step), [E.Batch(*mb) for mb in s.minibatches]

        def iterate():
            nonlocal agent, opt_state
            for mb in minibatches:
                agent, opt_state, info = step(agent, opt_state, mb)
            return agent, opt_state, info

        return Way(iterate, lambda: params(agent))

    runner = E.Carry(agent, opt_state, jnp.zeros((), jnp.int32), None, None, None, s.key)
    update, batch = eqx.filter_jit(lambda runner, batch: E.update(runner, batch, s.tx, s.args)), E.Batch(*s.batch)

    def iterate():
        nonlocal runner
        runner, info = update(runner, batch)
        return runner, info

    return Way(iterate, lambda: params(runner.agent))


# ---------------------------------------------------------------- NNX's ways
def functional(f, *models):
    """Flax's functional training loop (its performance guide): split once, jax.jit a pure function of (graphdef,
    state) that merges, calls f and returns the new state; update the objects from it when they are needed."""
    graphdef, state = nnx.split(models)

    @jax.jit
    def pure(graphdef, state, *args):
        models = nnx.merge(graphdef, state)
        out = f(*models, *args)
        return nnx.state(models), out

    def call(*args):
        nonlocal state
        state, out = pure(graphdef, state, *args)
        return out

    return call, lambda: nnx.update(models, state)


NOTHING_AFTER = lambda: None  # the other ways have updated the objects in place already
BIND = {  # NNX way -> (f, *models) -> (f with the models bound, what runs once an iteration after the calls)
    "nnx_jit": lambda f, *models: (functools.partial(nnx.jit(f), *models), NOTHING_AFTER),
    "nnx_jit_tree": lambda f, *models: (functools.partial(nnx.jit(f, graph=False), *models), NOTHING_AFTER),
    "nnx_jit_simple": lambda f, *models: (functools.partial(nnx.jit(f, graph_updates=False), *models), NOTHING_AFTER),
    "nnx_cached_partial": lambda f, *models: (nnx.cached_partial(nnx.jit(f), *models), NOTHING_AFTER),
    "nnx_jit_partial": lambda f, *models: (nnx.jit_partial(f, *models, graph=False), NOTHING_AFTER),
    "nnx_split": functional,
}


def nnx_way(way: str, s: Start, granularity: str) -> Way:
    N = s.scripts["nnx"]
    agent = N.Agent(OBS_DIM, s.hidden, NUM_ACTIONS, False, rngs=nnx.Rngs(0))
    for name in ("actor", "critic"):
        with_layers("jax_nnx", agent, name, s.layers[name])
    optimizer = nnx.Optimizer(agent, s.tx, wrt=nnx.Param)
    params = lambda: as_numpy([(x.kernel[...], x.bias[...]) for m in (agent.actor, agent.critic) for x in [*m.layers, m.out]])
    if granularity == "per_call":

        def minibatch_step(agent, optimizer: nnx.Optimizer, mb):  # update()'s, one minibatch
            def loss_fn(agent):
                logits, value = agent(mb.obs)
                return N.ppo_loss(logits, value, mb, s.args)

            (_, info), grads = nnx.value_and_grad(loss_fn, has_aux=True)(agent)
            optimizer.update(agent, grads)  # in place
            return info

        call, after = BIND[way](minibatch_step, agent, optimizer)
        minibatches = [N.Batch(*mb) for mb in s.minibatches]

        def iterate():
            for mb in minibatches:
                info = call(mb)
            after()
            return info, agent, optimizer

        return Way(iterate, params)

    def update(agent, optimizer: nnx.Optimizer, runner, batch):
        return N.update(agent, optimizer, runner, batch, s.args)

    call, after = BIND[way](update, agent, optimizer)
    runner, batch = N.Carry(None, None, None, s.key), N.Batch(*s.batch)  # update() reads the key alone

    def iterate():
        nonlocal runner
        runner, info = call(runner, batch)
        after()
        return runner, info, agent, optimizer

    return Way(iterate, params)


def make_way(way: str, s: Start, granularity: str) -> Way:
    if way == "linen":
        return linen_way(s, granularity)
    if way == "equinox":
        return equinox_way(s, granularity)
    return nnx_way(way, s, granularity)
