"""The JAX PPO scripts' study modes: an iteration built from its parts, run over several seeds (--num-seeds), timed in
two programs (--sync-timing), or with its rollout stepped from Python (--rollout python); and a search's batch of
configurations trained in one program (--configs)."""

import dataclasses
import functools

import jax
import jax.numpy as jnp

from benchback import checks, record


def study_iteration(jit, vmap, rollout, make_batch, update, args, log: record.Log):
    """The iteration of a JAX script as the studies run it, from its parts: each takes the models its framework passes
    (NNX's modules; none elsewhere), then the carry: rollout(..., carry, num_steps) -> (carry, traj), make_batch(...,
    carry, traj) -> (carry, batch, stats), update(..., carry, batch) -> (carry, losses). --num-seeds maps each program
    over the seeds with `vmap`. --sync-timing compiles two programs, rollout with its batch and the update, and waits
    between them (log.rollout_done). --rollout python compiles a rollout of one step (XLA drops a scan of one trip) and
    calls it from Python a step at a time, as the torch scripts step, its steps going to the rest of the iteration."""
    compiled = lambda f: jit(vmap(f) if args.num_seeds > 1 else f)
    python = args.rollout == "python"

    def rollout_and_batch(*inputs):  # (*models, carry), or with --rollout python (*models, carry, steps)
        *models, carry, steps = inputs if python else (*inputs, None)
        if python:  # one array per field, as the scan stacks them
            return make_batch(*models, carry, jax.tree.map(lambda *xs: jnp.concatenate(xs), *steps))
        return make_batch(*models, *rollout(*models, carry, args.num_steps))

    def updated(*inputs):  # (*models, carry, batch): update under a name of its own, which its program takes
        return update(*inputs)

    def iteration(*inputs):
        carry, batch, stats = rollout_and_batch(*inputs)
        carry, losses = update(*inputs[: -2 if python else -1], carry, batch)
        return carry, {**stats, **losses}

    step = compiled(lambda *inputs: rollout(*inputs, 1)) if python else None
    first, second, whole = compiled(rollout_and_batch), compiled(updated), compiled(iteration)

    def iterate(carry):
        inputs = (carry,)
        if python:
            steps = []
            for _ in range(args.num_steps):
                carry, traj = step(carry)
                steps.append(traj)
            inputs = (carry, steps)
        if not args.sync_timing:
            return whole(*inputs)
        carry, batch, stats = jax.block_until_ready(first(*inputs))
        log.rollout_done()
        carry, losses = second(carry, batch)
        return carry, {**stats, **losses}

    return iterate


def stack_seeds(seeds: list):
    """One seed's pytree, or several seeds' stacked on a leading axis, which vmap maps over."""
    return seeds[0] if len(seeds) == 1 else jax.tree.map(lambda *xs: jnp.stack(xs), *seeds)


def config_iteration(jit, vmap, iteration, args, models: tuple = (), bind=functools.partial):
    """A search's batch (--configs): the iteration mapped with `vmap` over the configurations, stacked on a leading axis
    as --num-seeds stacks seeds, each iteration given args whose tuned numbers are its configuration's, as traced
    arrays (the learning rate, in its optimizer state, too). One program trains them all; a configuration's run can
    differ from its run alone in the last bits, where a product of two of them is rounded to float32 in the program.
    The program's first argument is the configurations' numbers, bound here with the models (NNX's, with its
    cached_partial) so that it takes what the iteration takes after them: the carry, which a script may donate by
    position (donate_argnums), or as Equinox donates all but the first argument (donate="all-except-first")."""
    configs = checks.read_configs(args)
    one = len(configs) == 1  # not stacked, as one seed is not (stack_seeds): nothing to map over
    dtype = lambda name: jnp.int32 if isinstance(getattr(args, name), int) else jnp.float32  # as the Args' default
    tuned = {name: jnp.array([c[name] for c in configs][0 if one else slice(None)], dtype(name)) for name in configs[0]}

    def each(tuned, *inputs):
        return iteration(*inputs, dataclasses.replace(args, **tuned))

    each.__name__ = iteration.__name__  # which names the program in XLA's dumps and profiles: jit_iteration
    return bind(jit(each if one else vmap(each)), tuned, *models)  # tuned: on the device once, not sent again each call


def at_learning_rate(opt_state, learning_rate: float):
    """The state of an optax.inject_hyperparams optimizer at a configuration's learning rate: its update reads the
    rate from there (optax/schedules/_inject.py, update_fn)."""
    return opt_state._replace(hyperparams={**opt_state.hyperparams, "learning_rate": jnp.asarray(learning_rate, jnp.float32)})
