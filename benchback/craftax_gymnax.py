"""Craftax's environments with gymnax 1.0's step, so the PPO scripts train on them unchanged.

Craftax (Matthews et al., 2024) follows gymnax's older API: one `done` for both death and the time limit,
and the observation after the automatic reset only. The scripts rely on gymnax 1.0's: `terminated` and
`truncated` apart, and `info["final_observation"]`, the observation the step reached before any reset (a
truncation is bootstrapped with its value). This wraps Craftax's environment without auto-reset and
resets as craftax's own auto-reset environment does (the same key split, the same selection), so both
see the same worlds; tests/test_craftax.py checks that against craftax's own auto-reset code.

gymnax_envs.make imports this module for a Craftax id only.
"""

from functools import partial

import jax
import jax.numpy as jnp
from gymnax.environments import spaces

# Craftax's symbolic environments (the pixel ones render textures: not what a benchmark of frameworks needs)
ENV_IDS = ("Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1")


class CraftaxGymnax:
    """A Craftax environment as a gymnax 1.0 one: step -> (obs, state, reward, terminated, truncated, info)."""

    def __init__(self, env):
        self.env = env  # a Craftax environment without automatic reset

    @property
    def default_params(self):
        return self.env.default_params

    @partial(jax.jit, static_argnames=("self",))  # jitted as gymnax's own reset and step are
    def reset(self, key, params):
        return self.env.reset_env(key, params)

    @partial(jax.jit, static_argnames=("self",))
    def step(self, key, state, action, params):
        key_step, key_reset = jax.random.split(key)  # as craftax's auto-reset step splits it
        obs_st, state_st, reward, done, info = self.env.step_env(key_step, state, action, params)
        # The time limit is the one end that is not the agent's doing (a death on that very step counts as
        # the truncation: one step in max_timesteps).
        truncated = state_st.timestep >= params.max_timesteps
        terminated = jnp.logical_and(done, jnp.logical_not(truncated))
        obs_re, state_re = self.env.reset_env(key_reset, params)
        state = jax.tree.map(lambda reset, stepped: jax.lax.select(done, reset, stepped), state_re, state_st)
        obs = jax.lax.select(done, obs_re, obs_st)
        return obs, state, reward, terminated, truncated, {**info, "final_observation": obs_st}

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(self.env.num_actions)

    def observation_space(self, params) -> spaces.Box:
        box = self.env.observation_space(params)
        return spaces.Box(box.low, box.high, box.shape, box.dtype)


def make(env_id: str):
    """Like gymnax.make: the environment and its default parameters."""
    from craftax.craftax_env import make_craftax_env_from_name  # here: ENV_IDS is read where craftax is not installed

    env = CraftaxGymnax(make_craftax_env_from_name(env_id, auto_reset=False))
    return env, env.default_params
