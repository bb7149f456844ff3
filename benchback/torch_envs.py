"""The torch scripts' environments, behind one interface whatever steps them: gymnax's in JAX, handed over by DLPack
(GymnaxEnvs, the default), or torch_ports.py's ports or Gymnasium's vector envs (PortEnvs, --env-backend torch, or
gymnasium and gymnasium-async).

    reset(seed) -> (state, obs)             obs a tensor; the state wherever the envs keep it
    step(state, action) -> (state, obs, EnvStep)
    to_torch(*outputs) -> tensors           some of a step's outputs in torch, at once (SAC stores them every step)
    stack(steps) -> the steps stacked       a rollout's steps (a NamedTuple each, ending with an EnvStep's fields), one
                                            tensor a field (PPO, once a rollout)
    tally(state) -> (state, counts)         with tally=True: the episodes ended since the last tally (their count,
                                            returns and lengths summed), on the host, and the count started afresh

A step reads nothing back to the host, so that it can be timed without a sync (and PortEnvs' compiled with the policy).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import torch

from benchback import gymnax_envs, torch_ports
from benchback.gymnax_envs import EpisodeStats


class EnvStep(NamedTuple):  # what a step of every env gives besides the next observation (GymnaxEnvs': JAX's arrays)
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor  # the observation reached before any auto-reset: its value bootstraps a truncation
    finished: EpisodeStats  # the episodes that ended on this step (0 where none did)


class EnvState(NamedTuple):
    env_state: object  # the environments' own
    episode: EpisodeStats  # of each env's episode so far
    ended: dict  # with tally=True, the episodes that ended since the last tally: count, returns and lengths summed
    key: object = None  # GymnaxEnvs': the JAX key of the next step


def episode_counts(finished: EpisodeStats) -> dict:
    return dict(episodes=(finished.lengths > 0).sum(), return_sum=finished.returns.sum(), length_sum=finished.lengths.sum())


class GymnaxEnvs:
    """num_envs of gymnax's environments, stepped from torch. A step is one jitted JAX call; action and observation
    cross by DLPack without a copy, the other outputs stay in JAX until to_torch or stack hands them over."""

    def __init__(self, env_id: str, num_envs: int, jax_device, tally: bool = False):
        self.env, self.env_params = gymnax_envs.make(env_id)
        self.num_envs, self.jax_device, self.tallies = num_envs, jax_device, tally
        self.space = self.env.action_space(self.env_params)  # Discrete, or Box (continuous actions)
        self.num_actions, self.continuous = (self.space.n, False) if hasattr(self.space, "n") else (self.space.shape[0], True)
        self.jax_step = jax.jit(self.step_envs)
        self.jax_stack = jax.jit(lambda outputs: jax.tree.map(lambda *steps: jnp.stack(steps), *outputs))  # one call
        self.jax_tally = jax.jit(lambda state: (state._replace(ended=jax.tree.map(jnp.zeros_like, state.ended)), state.ended))
        # Neither allocator knows the other's stream: a buffer handed over and freed could be reused while a kernel queued
        # on the other stream still reads it. Each is kept until the stack or tally after next, past an iteration's sync.
        self.handed_over, self.previous = [], []

    def reset(self, seed: int):
        key, _, reset_key = jax.random.split(jax.random.key(seed), 3)  # as the JAX scripts split it: the same worlds
        reset = jax.vmap(self.env.reset, in_axes=(0, None))  # one key per env; the same params
        obs, env_state = reset(jax.random.split(reset_key, self.num_envs), self.env_params)
        episode = EpisodeStats(jnp.zeros(self.num_envs), jnp.zeros(self.num_envs, jnp.int32))
        ended = dict(episodes=jnp.int32(0), return_sum=jnp.float32(0), length_sum=jnp.int32(0)) if self.tallies else {}
        # strongly typed, and committed to the device from the start: either change would retrace the step
        state = EnvState(gymnax_envs.strongly_typed(env_state), episode, ended, key)
        state, obs = jax.device_put((state, obs), self.jax_device)
        self.handed_over.append(obs)
        return state, torch.from_dlpack(obs)

    def step_envs(self, state: EnvState, action):
        """Step every env once (gymnax resets finished ones), in JAX: the state after it, the observation, the rest."""
        key, step_key = jax.random.split(state.key)
        keys, step = jax.random.split(step_key, self.num_envs), jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        action = gymnax_envs.clipped(self.space, action)  # continuous: to the bounds, for the step
        obs, env_state, reward, terminated, truncated, info = step(keys, state.env_state, action, self.env_params)
        episode, finished = gymnax_envs.count_episodes(state.episode, reward, jnp.logical_or(terminated, truncated))
        counts = episode_counts(finished) if self.tallies else {}
        ended = {name: total + counts[name] for name, total in state.ended.items()}
        output = EnvStep(reward, terminated, truncated, info["final_observation"], finished)
        return EnvState(env_state, episode, ended, key), obs, output

    def step(self, state: EnvState, action: torch.Tensor):
        # torch -> JAX, zero-copy; on GPU, jax.dlpack.from_dlpack makes JAX's stream wait for torch's current stream.
        action = action if self.continuous else action.int()  # JAX runs without x64: it would copy an int64 action
        state, obs, output = self.jax_step(state, jax.dlpack.from_dlpack(action))
        self.handed_over += [action, obs]
        # JAX -> torch, zero-copy. JAX's __dlpack__ blocks until the buffer is ready on CPU; on GPU it makes
        # torch's current stream wait for it instead (no host sync).
        return state, torch.from_dlpack(obs), output

    def to_torch(self, *outputs):
        self.handed_over += outputs
        return tuple(map(torch.from_dlpack, outputs))

    def stack(self, steps: list):
        """A rollout's steps, one tensor a field: torch's fields stacked in torch, the envs' by one jitted call."""
        self.previous.clear()  # (first: the memory they held is the stacked outputs')
        n = len(steps[0]) - len(EnvStep._fields)  # the fields before the EnvStep's: the script's own tensors
        taken = [torch.stack(field) for field in zip(*(step[:n] for step in steps))]
        outputs = self.jax_stack([EnvStep(*step[n:]) for step in steps])
        self.previous, self.handed_over = self.handed_over + [outputs], []
        return type(steps[0])(*taken, *jax.tree.map(torch.from_dlpack, outputs))

    def tally(self, state: EnvState):
        self.previous, self.handed_over = self.handed_over, []
        state, ended = self.jax_tally(state)
        return state, jax.device_get(ended)


class PortEnvs:
    """torch_ports.py's environments, or Gymnasium's, with each env's episode counted in torch as it goes. Whole-batch
    ops with no host read (but Gymnasium's own step), as the ports' step, so that a step can be compiled with the
    policy. The ports (and Gymnasium) clip a continuous action to its bounds themselves, as gymnax does."""

    def __init__(self, backend: str, env_id: str, num_envs: int, device: torch.device | str, seed: int, tally: bool):
        if backend == "torch":
            make = torch_ports.make
        else:  # imported here: Gymnasium only where it steps the envs
            from benchback import gymnasium_envs

            make = lambda *a: gymnasium_envs.make(*a, seed, asynchronous=backend == "gymnasium-async")  # noqa: E731
        self.envs, self.num_envs, self.device, self.tallies = make(env_id, num_envs, device), num_envs, device, tally
        env, env_params = gymnax_envs.make(env_id)  # the same dynamics: gymnax's action space
        self.space = env.action_space(env_params)
        self.num_actions, self.continuous = self.envs.num_actions, self.envs.continuous

    def zeros(self, *shape, dtype=torch.float32) -> torch.Tensor:
        return torch.zeros(shape, dtype=dtype, device=self.envs.device)

    def no_episodes(self) -> dict:
        if not self.tallies:
            return {}
        return dict(episodes=self.zeros(dtype=torch.int32), return_sum=self.zeros(), length_sum=self.zeros(dtype=torch.int32))

    def reset(self, seed: int):
        # A generator of its own: torch's, which the network's init draws from next, stays as the gymnax backend
        # leaves it (the same initial parameters). Gymnasium's draws are its own, seeded when it was made.
        obs, env_state = self.envs.reset(generator=torch.Generator(self.envs.device).manual_seed(seed))
        episode = EpisodeStats(self.zeros(self.num_envs), self.zeros(self.num_envs, dtype=torch.int32))
        return EnvState(env_state, episode, self.no_episodes()), obs

    def step(self, state: EnvState, action: torch.Tensor):
        obs, env_state, reward, terminated, truncated, final_obs = self.envs.step(state.env_state, action)
        done = terminated | truncated
        returns, lengths = state.episode.returns + reward, state.episode.lengths + 1
        finished = EpisodeStats(torch.where(done, returns, 0.0), torch.where(done, lengths, 0))
        episode = EpisodeStats(torch.where(done, 0.0, returns), torch.where(done, 0, lengths))
        counts = episode_counts(finished) if self.tallies else {}
        ended = {name: total + counts[name].to(total.dtype) for name, total in state.ended.items()}
        return EnvState(env_state, episode, ended), obs, EnvStep(reward, terminated, truncated, final_obs, finished)

    @staticmethod
    def to_torch(*outputs):
        return outputs

    @staticmethod
    def stack(steps: list):
        return torch.utils._pytree.tree_map(lambda *xs: torch.stack(xs), *steps)  # (num_steps, num_envs) a field

    def tally(self, state: EnvState):
        return state._replace(ended=self.no_episodes()), {name: value.item() for name, value in state.ended.items()}


def make(backend: str, env_id: str, num_envs: int, device: torch.device, jax_device, seed: int, tally: bool = False):
    """The environments on --env-backend: gymnax's (on jax_device), torch_ports.py's or Gymnasium's (on device; in a
    process each with gymnasium-async)."""
    if backend == "gymnax":
        return GymnaxEnvs(env_id, num_envs, jax_device, tally)
    return PortEnvs(backend, env_id, num_envs, device, seed, tally)
