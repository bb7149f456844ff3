"""gymnax's environments as every script steps them, in JAX: built by id (Craftax's too), their actions clipped to the
bounds, each env's episode counted as it goes, the state strongly typed for jit, the ids the scripts can train.

The torch scripts step the same environments through torch_envs.GymnaxEnvs, which hands them over by DLPack.
"""

from typing import NamedTuple

import gymnax
import jax
import jax.numpy as jnp
import numpy as np

# gymnax's ids but MNISTBandit-bsuite (built, it downloads MNIST), and Craftax's symbolic ones (its pixel ones load
# textures).
IDS = [e for e in gymnax.registered_envs if e != "MNISTBandit-bsuite"] + ["Craftax-Classic-Symbolic-v1", "Craftax-Symbolic-v1"]


def make(env_id: str):
    """gymnax's environment and its parameters, or Craftax's from craftax_gymnax.py (imported for a Craftax id only)."""
    if env_id.startswith("Craftax"):
        from benchback import craftax_gymnax

        return craftax_gymnax.make(env_id)
    return gymnax.make(env_id)


class EpisodeStats(NamedTuple):  # per env: the return and length of its episode so far, or of one that just ended
    returns: jax.Array  # (torch's tensors in torch_envs.PortEnvs)
    lengths: jax.Array


def count_episodes(episode: EpisodeStats, reward, done):
    """After a step: each env's episode so far (0 where one ended), and the episodes that ended (0 where none did)."""
    returns, lengths = episode.returns + reward, episode.lengths + 1
    finished = EpisodeStats(jnp.where(done, returns, 0.0), jnp.where(done, lengths, 0))
    return EpisodeStats(jnp.where(done, 0.0, returns), jnp.where(done, 0, lengths)), finished


def clipped(space, action):
    """An action as the environment is stepped with it: continuous ones clipped to the space's bounds, as CleanRL's
    ClipAction wrapper does (gymnax's Reacher-misc and Swimmer-misc do not clip, PointRobot-misc observes the unclipped
    action); the log-probability stays the sample's. Discrete actions are returned as they are."""
    return jnp.clip(action, space.low, space.high) if isinstance(space, gymnax.environments.spaces.Box) else action


def action_space(env_id: str) -> dict:
    """The environment's actions, as the record names them: discrete (how many) or continuous (the shape, the bounds)."""
    if env_id.startswith("Craftax"):  # all discrete; named without building one
        return {"kind": "discrete"}
    env, env_params = make(env_id)
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
