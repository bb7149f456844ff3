"""Does ppo_jax_linen.py's instrumentation cost anything? A side-by-side check.

It times, in one process, ppo_jax_linen.py's steady iteration (median of iterations 1..) and a
plain single-jit Linen PPO iteration written independently here, PureJaxRL style, with no
timing, logging or episode bookkeeping: the same network, env, batch, epochs, minibatches and
truncation bootstrap, so the two do the same work. The two alternate over several rounds
(plain, script, plain, script, ..., plain) and each keeps its best round, so that a passing
load on the machine does not decide the ratio.

    python -m studies.linen_overhead --env-id CartPole-v1 --hidden 64,64 --out results/studies/linen-overhead/linen-overhead.json
"""

import dataclasses
import os
import statistics
import sys
import time

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import tyro

import ppo_jax_linen
from benchback.gymnax_envs import make
from benchback.record import write_json_atomic
from studies.envs import env_problem


@dataclasses.dataclass
class Options:
    env_id: str = "CartPole-v1"
    """the environment both runs train on"""
    hidden: str = "64,64"
    """hidden sizes of both networks"""
    iterations: int = 40
    """iterations per run (the first, which compiles, is left out of the median)"""
    rounds: int = 3
    """runs of the script, each between two runs of the plain reference"""
    out: str = ""
    """write the figures as JSON here"""


def plain_iteration_fn(env, env_params, hidden, num_actions, a: ppo_jax_linen.Args):
    """Build a single-jit PPO iteration; returns (init, jitted step)."""

    class MLP(nn.Module):
        out: int
        gain: float

        @nn.compact
        def __call__(self, x):
            x = x.reshape(x.shape[0], -1)
            for h in hidden:
                x = nn.tanh(nn.Dense(h, kernel_init=nn.initializers.orthogonal(np.sqrt(2)))(x))
            return nn.Dense(self.out, kernel_init=nn.initializers.orthogonal(self.gain))(x)

    actor, critic = MLP(num_actions, 0.01), MLP(1, 1.0)

    class Net:  # the two MLPs under one params dict
        def init(self, key, obs):
            k1, k2 = jax.random.split(key)
            return {"actor": actor.init(k1, obs), "critic": critic.init(k2, obs)}

        def apply(self, params, obs):
            return actor.apply(params["actor"], obs), critic.apply(params["critic"], obs)[:, 0]

    net, n_mb = Net(), a.num_minibatches
    tx = optax.chain(optax.clip_by_global_norm(a.max_grad_norm), optax.adam(a.learning_rate, eps=1e-5))
    step_env = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def init(key):
        k1, k2 = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(k1, a.num_envs), env_params)
        params = net.init(k2, obs)
        return params, tx.init(params), state, obs, key

    def step(carry):
        params, opt, state, obs, key = carry

        def env_step(c, _):  # the actor alone acts; the critic runs after the scan, as in the script
            state, obs, key = c
            key, k1, k2 = jax.random.split(key, 3)
            logits = actor.apply(params["actor"], obs)
            act = jax.random.categorical(k1, logits)
            logp = jax.nn.log_softmax(logits)[jnp.arange(a.num_envs), act]
            nobs, state, r, term, trunc, info = step_env(jax.random.split(k2, a.num_envs), state, act, env_params)
            return (state, nobs, key), (obs, act, logp, r, term, jnp.logical_or(term, trunc), info["final_observation"])

        (state, obs, key), (o, act, logp, r, term, done, final) = jax.lax.scan(env_step, (state, obs, key), None, a.num_steps)
        values = critic.apply(params["critic"], jnp.concatenate([o, final]).reshape(2 * a.num_steps * a.num_envs, -1))
        v, boot = values[:, 0].reshape(2, a.num_steps, a.num_envs)

        def gae(next_adv, x):
            r, v, boot, term, done = x
            adv = r + a.gamma * boot * (1 - term) - v + a.gamma * a.gae_lambda * (1 - done) * next_adv
            return adv, adv

        _, adv = jax.lax.scan(gae, jnp.zeros(a.num_envs), (r, v, boot, term, done), reverse=True)
        data = jax.tree.map(lambda x: x.reshape(-1, *x.shape[2:]), (o, act, logp, v, adv, adv + v))

        def loss(params, o, act, logp, v_old, adv, ret):
            logits, v = net.apply(params, o)
            lp = jax.nn.log_softmax(logits)
            ratio = jnp.exp(lp[jnp.arange(act.shape[0]), act] - logp)
            adv = (adv - adv.mean()) / (adv.std() + 1e-8)
            pg = jnp.maximum(-adv * ratio, -adv * jnp.clip(ratio, 1 - a.clip_coef, 1 + a.clip_coef)).mean()
            v_clip = v_old + jnp.clip(v - v_old, -a.clip_coef, a.clip_coef)
            vl = 0.5 * jnp.maximum((v - ret) ** 2, (v_clip - ret) ** 2).mean()
            ent = -(jnp.exp(lp) * lp).sum(-1).mean()
            return pg - a.ent_coef * ent + a.vf_coef * vl

        def minibatch(c, mb):
            params, opt = c
            grads = jax.grad(loss)(params, *mb)
            updates, opt = tx.update(grads, opt, params)
            return (optax.apply_updates(params, updates), opt), None

        def epoch(c, _):
            params, opt, key = c
            key, k = jax.random.split(key)
            perm = jax.random.permutation(k, data[0].shape[0])
            mbs = jax.tree.map(lambda x: x[perm].reshape(n_mb, -1, *x.shape[1:]), data)
            (params, opt), _ = jax.lax.scan(minibatch, (params, opt), mbs)
            return (params, opt, key), None

        (params, opt, key), _ = jax.lax.scan(epoch, (params, opt, key), None, a.update_epochs)
        return params, opt, state, obs, key

    return init, jax.jit(step)


def time_plain(env, env_params, hidden, args, iterations):
    init, step = plain_iteration_fn(env, env_params, hidden, env.action_space(env_params).n, args)
    carry = init(jax.random.key(args.seed))
    durations = []
    for _ in range(iterations):
        t0 = time.perf_counter()
        carry = jax.block_until_ready(step(carry))
        durations.append(time.perf_counter() - t0)
    return statistics.median(durations[1:])


def main(opts: Options):
    if problem := env_problem(opts.env_id, discrete_gymnax=True):
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    args = ppo_jax_linen.Args(
        env_id=opts.env_id,
        hidden=opts.hidden,
        tensorboard=False,
        quiet=True,
        total_timesteps=opts.iterations * 32 * 256,
        anneal_lr=False,
    )
    hidden, _ = ppo_jax_linen.check_args(args)
    env, env_params = make(args.env_id)
    plain, script = [], []
    with jax.default_matmul_precision("highest"):
        plain.append(time_plain(env, env_params, hidden, args, opts.iterations))
        for _ in range(opts.rounds):
            record = ppo_jax_linen.train(args)
            script.append(statistics.median(record["iteration_durations"][1:]))
            plain.append(time_plain(env, env_params, hidden, args, opts.iterations))
    ratio = min(script) / min(plain)
    result = {
        "env_id": opts.env_id,
        "hidden": list(hidden),
        "iterations": opts.iterations,
        "device": record["device"],
        "cpu_count": os.cpu_count(),
        "versions": record["versions"],
        "git_commit": record["git_commit"],
        "plain_s": plain,
        "script_s": script,
        "ratio": ratio,
    }
    print(
        f"steady seconds per iteration, best of {opts.rounds}: plain single-jit {min(plain):.4f}, "
        f"ppo_jax_linen.py {min(script):.4f}; ratio {ratio:.3f}"
    )
    if opts.out:
        write_json_atomic(opts.out, result)


if __name__ == "__main__":
    main(tyro.cli(Options))
