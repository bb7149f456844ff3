"""Craftax through benchback/craftax_gymnax.py: the same game as craftax's own auto-reset environment, the time limit as a
truncation, no textures, and the same first observations in every variant for the same seed.

Compiling Craftax's step takes tens of seconds (it generates a world), so the default run checks the adapter on a
toy game written to craftax's API, against craftax's own auto-reset code, and -m slow on Craftax-Classic itself."""

import functools
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from craftax.craftax_classic import constants
from craftax.craftax_env import make_craftax_env_from_name
from craftax.environment_base.environment_bases import EnvironmentAutoReset, EnvironmentNoAutoReset
from flax import struct
from gymnax.environments import spaces

from bench import env_cost
from benchback import craftax_gymnax
from benchback.checks import UsageError
from conftest import ROOT, VARIANTS, load

ENV_ID = "Craftax-Classic-Symbolic-v1"


@pytest.fixture(scope="module")
def adapter():
    return craftax_gymnax.make(ENV_ID)[0]


@functools.cache
def own_env():
    """craftax's own environment with automatic reset: what the adapter must play alike."""
    return make_craftax_env_from_name(ENV_ID, auto_reset=True)


@functools.cache
def random_rollout(env, num_envs: int, num_steps: int):
    """A jitted function of (params, key): uniformly random actions in `num_envs` envs for `num_steps` steps, the
    first observations and everything step returns, stacked over steps (one compilation per env and size)."""
    num_actions = env.action_space(env.default_params).n

    @jax.jit
    def run(params, key):
        reset_key, key = jax.random.split(key)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(reset_key, num_envs), params)

        def step(state, key):
            action_key, step_key = jax.random.split(key)
            action = jax.random.randint(action_key, (num_envs,), 0, num_actions)
            out = jax.vmap(env.step, in_axes=(0, 0, 0, None))(jax.random.split(step_key, num_envs), state, action, params)
            return out[1], (out[0], *out[2:])

        return obs, jax.lax.scan(step, state, jax.random.split(key, num_steps))[1]

    return run


def check_plays_alike(adapter, own, params, num_envs: int, num_steps: int):
    """Over a random rollout from the same key: the same observations, rewards and ends as `own` (craftax's auto-reset
    code), the ends split into terminations and truncations (both must occur), and the observation before each reset
    kept. A truncation is the step that reaches params.max_timesteps, never another."""
    key = jax.random.key(0)
    first, (obs, reward, terminated, truncated, info) = random_rollout(adapter, num_envs, num_steps)(params, key)
    own_first, (own_obs, own_reward, own_done, _) = random_rollout(own, num_envs, num_steps)(params, key)

    np.testing.assert_array_equal(first, own_first)
    np.testing.assert_array_equal(obs, own_obs)
    np.testing.assert_array_equal(reward, own_reward)
    np.testing.assert_array_equal(terminated | truncated, own_done)
    assert not np.any(terminated & truncated)
    assert terminated.sum() > 0 and truncated.sum() > 0

    done = np.asarray(terminated | truncated)
    lengths = np.zeros_like(done, dtype=int)  # steps since the episode's reset, this one included
    for t in range(num_steps):
        lengths[t] = (lengths[t - 1] * ~done[t - 1] if t else 0) + 1
    np.testing.assert_array_equal(truncated, lengths == params.max_timesteps)

    final = np.asarray(info["final_observation"])
    np.testing.assert_array_equal(final[~done], np.asarray(obs)[~done])  # no reset: the observation itself
    assert not np.any(np.all(final[done] == np.asarray(obs)[done], axis=-1))  # a reset: the world before it


@struct.dataclass
class WalkState:
    position: jax.Array
    timestep: jax.Array


@struct.dataclass
class WalkParams:
    max_timesteps: int = 20


class WalkGame:
    """A toy game in craftax's API: a noisy walk on a line from a random start, ended by passing 2 (a death) or by
    the time limit; it pays the position, and shows the position and the time."""

    @property
    def default_params(self):
        return WalkParams()

    @property
    def num_actions(self):
        return 3

    def action_space(self, params=None):
        return spaces.Discrete(3)

    def reset_env(self, key, params):
        state = WalkState(jax.random.uniform(key, minval=-1.0, maxval=1.0), jnp.zeros((), jnp.int32))
        return self.get_obs(state), state

    def step_env(self, key, state, action, params):
        state = WalkState(state.position + 0.3 * (action - 1) + 0.1 * jax.random.normal(key), state.timestep + 1)
        done = (state.position > 2.0) | (state.timestep >= params.max_timesteps)
        return self.get_obs(state), state, state.position, done, {}

    def get_obs(self, state):
        return jnp.stack([state.position, state.timestep.astype(jnp.float32)])


class Walk(WalkGame, EnvironmentNoAutoReset):
    pass


class WalkAutoReset(WalkGame, EnvironmentAutoReset):
    pass


def test_the_adapter_plays_a_game_as_craftaxs_own_auto_reset_code_does():
    check_plays_alike(craftax_gymnax.CraftaxGymnax(Walk()), WalkAutoReset(), WalkParams(), num_envs=8, num_steps=256)


@pytest.mark.slow
def test_the_adapter_plays_craftax_classic_as_craftaxs_own_auto_reset_env_does(adapter):
    """A 40-step limit (10,000 by default), so that the rollout holds both kinds of end."""
    check_plays_alike(adapter, own_env(), adapter.default_params.replace(max_timesteps=40), num_envs=8, num_steps=256)
    assert constants.load_all_textures.cache_info().currsize == 0  # the symbolic game needs no textures


def test_the_spaces_are_gymnaxs(adapter):
    params = adapter.default_params
    assert adapter.action_space(params).n == 17
    assert adapter.observation_space(params).shape == (1345,)


class Reset(Exception):
    """Raised by the recording env once a script resets its envs: the test needs nothing after that."""


def reset_keys(variant: str, env, monkeypatch, seed: int) -> np.ndarray:
    """The keys `variant`'s train() resets its envs with for `seed` (they decide the first observations: the same
    keys, the same worlds); its env is `env`, which records them and stops the run there."""
    module = load(variant)
    seen = []

    class Recording:
        def __getattr__(self, name):
            return getattr(env, name)

        def reset(self, key, params):
            seen.append(np.asarray(jax.random.key_data(key.val)))  # called under jax.vmap: a tracer of all the keys
            raise Reset

    monkeypatch.setattr(module.gymnax_envs, "make", lambda env_id: (Recording(), env.default_params))
    args = module.Args(env_id=ENV_ID, seed=seed, num_envs=4, cuda=False, tensorboard=False, quiet=True)
    with pytest.raises(Reset):
        module.train(args)
    assert len(seen) == 1 and seen[0].shape[0] == 4, f"{variant}: {[k.shape for k in seen]}"
    return seen[0]


@pytest.mark.slow  # every variant's setup on Craftax, about 14 s on 2 cores: kept out of the default run's 15 minutes
@pytest.mark.skipif(len(VARIANTS) < 2, reason="needs two variants to compare")
def test_every_variant_starts_from_the_same_observations_for_the_same_seed(adapter, monkeypatch):
    keys = {v: reset_keys(v, adapter, monkeypatch, seed=5) for v in VARIANTS}
    reference = keys[VARIANTS[0]]
    for variant, k in keys.items():
        np.testing.assert_array_equal(k, reference, err_msg=f"{variant} vs {VARIANTS[0]}")
    assert not np.array_equal(reset_keys(VARIANTS[0], adapter, monkeypatch, seed=6), reference)
    first, _ = jax.vmap(adapter.reset, in_axes=(0, None))(jax.random.wrap_key_data(reference), adapter.default_params)
    assert len({np.asarray(o).tobytes() for o in first}) == 4, "the 4 envs should start in 4 different worlds"


def test_every_script_takes_the_adapters_ids(variant):
    """The scripts list Craftax's ids themselves (they import the adapter only for one): the same list."""
    module = load(variant)
    for env_id in craftax_gymnax.ENV_IDS:
        module.check_args(module.Args(env_id=env_id, cuda=False))
    with pytest.raises(UsageError, match="Craftax-Classic-Pixels-v1"):
        module.check_args(module.Args(env_id="Craftax-Classic-Pixels-v1", cuda=False))


@pytest.mark.slow  # 10-15 s on 2 cores: keeps the default run under 15 minutes
def test_env_cost_measures_gymnax_envs_without_craftax_and_names_it_for_a_craftax_id(tmp_path, monkeypatch):
    """A GPU machine's own image may lack craftax: only a Craftax id needs it, and then says so in one line."""
    out = tmp_path / "env_cost.json"
    argv = ["bench/env_cost.py", "CartPole-v1", "--out", str(out), "--steps", "10", "--calls", "3"]
    blocked = f"import sys, runpy; sys.modules['craftax'] = None; sys.argv = {argv!r}; "  # import craftax fails
    code = blocked + "runpy.run_path('bench/env_cost.py', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "CartPole-v1" in json.loads(out.read_text())["envs"], proc.stderr[-2000:]
    monkeypatch.setattr(env_cost, "installed_version", lambda name: None)
    assert (
        env_cost.bad_env(["CartPole-v1", ENV_ID])
        == f"{ENV_ID} needs the craftax package, which is not installed (requirements.txt pins it)"
    )
