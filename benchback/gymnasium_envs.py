"""Gymnasium's vector environments on the CPU, as CleanRL trains, behind torch_ports.py's interface (reset, and a step
that resets what ended in the same step): the --env-backend gymnasium (and gymnasium-async, a process per copy) the
torch scripts compare gymnax's with. Gymnasium's own CartPole-v1, Acrobot-v1 and Pendulum-v1, and gridworld.py's
FourRooms-misc."""

import functools
import warnings

import gymnasium
import torch

from benchback import gridworld, torch_ports

IDS = torch_ports.IDS + gridworld.IDS


class GymnasiumEnv:
    """Gymnasium's vector environment on the CPU behind TorchEnv's interface: the state is None (Gymnasium keeps
    its own), actions go to NumPy and observations come back as float32 tensors on `device`, every step."""

    def __init__(self, env_id: str, num_envs: int, device: torch.device | str, seed: int, asynchronous: bool = False):
        if env_id not in IDS:
            raise ValueError(f"unsupported env id {env_id!r}; gymnasium_envs has {', '.join(IDS)}")
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.seed = seed  # for the first reset only: one seeded stream for the whole run
        self.envs = vector_env(env_id, num_envs, asynchronous)
        self.vectorized = not isinstance(self.envs, (gymnasium.vector.SyncVectorEnv, gymnasium.vector.AsyncVectorEnv))
        space = self.envs.single_action_space  # Discrete, or Box (continuous actions)
        self.continuous = not hasattr(space, "n")
        self.num_actions = int(space.shape[0] if self.continuous else space.n)
        self.observation_shape = tuple(self.envs.single_observation_space.shape)

    def to_torch(self, x, dtype) -> torch.Tensor:
        return torch.as_tensor(x, dtype=dtype).to(self.device)

    def reset(self, generator=None):
        """(obs, None); generator is ignored (Gymnasium draws from its own generators, seeded at the first reset)."""
        obs, _ = self.envs.reset(seed=self.seed)
        self.seed = None
        return self.to_torch(obs, torch.float32), None

    def same_step_reset(self, obs, done):
        """What CartPoleVectorEnv.step does first on its next call for the environments in `done`, done now. It resets
        with NEXT_STEP: the step after an episode ends would return the reset observation with reward 0 and both flags
        false, a step the agent's action is lost on. Done here as that step would (the same draws from its generator,
        its step counter back to 0), episodes and their 500-step limit stay Gymnasium's own."""
        envs = self.envs.unwrapped
        envs.state[:, done] = envs.np_random.uniform(low=envs.low, high=envs.high, size=(4, done.sum()))
        envs.steps[done] = 0
        envs.prev_done[done] = False  # so that its next step does not reset them again
        obs[done] = envs.state[:, done].T.astype(obs.dtype)

    def step(self, state, action: torch.Tensor):
        """(obs, None, reward, terminated, truncated, final_obs), as TorchEnv.step."""
        import numpy as np

        obs, reward, terminated, truncated, info = self.envs.step(action.cpu().numpy())
        final_obs = obs.copy()
        done = terminated | truncated
        if self.vectorized:
            if done.any():
                self.same_step_reset(obs, done)
        elif "_final_obs" in info:
            ended = info["_final_obs"]
            final_obs[ended] = np.stack(info["final_obs"][ended])
        return (
            self.to_torch(obs, torch.float32),
            None,
            self.to_torch(reward, torch.float32),
            self.to_torch(terminated, torch.bool),
            self.to_torch(truncated, torch.bool),
            self.to_torch(final_obs, torch.float32),
        )


def vector_env(env_id: str, num_envs: int, asynchronous: bool = False) -> gymnasium.vector.VectorEnv:
    """num_envs copies of env_id in Gymnasium's vector environment: a Python environment per copy, stepped in turn
    (SyncVectorEnv) or in a process each (AsyncVectorEnv), which SAME_STEP resets on the step that ends an episode, with
    its last observation in info["final_obs"] (where info["_final_obs"]); CartPole-v1 in turn NumPy-vectorized."""
    same_step = gymnasium.vector.AutoresetMode.SAME_STEP
    make = gridworld.make if env_id in gridworld.IDS else functools.partial(gymnasium.make, env_id)
    if asynchronous:
        # Forked, Gymnasium's default on Linux (before Python 3.14): forkserver and spawn would run the script's
        # imports, JAX's and torch's, in every process (multiprocessing/spawn.py's get_preparation_data names the main
        # module to import). JAX warns on any fork once it has started (jax/_src/xla_bridge.py's _at_fork), as a fork
        # can deadlock a child that calls into it; these children run Gymnasium's worker loop and the environment only.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "os.fork", RuntimeWarning)
            return gymnasium.vector.AsyncVectorEnv([make] * num_envs, autoreset_mode=same_step, context="fork")
    if env_id in torch_ports.IDS and gymnasium.spec(env_id).vector_entry_point is not None:
        # CartPole has a NumPy-vectorized version (CartPoleVectorEnv). Gymnasium 1.3's make_vec refuses vector_kwargs
        # for it, and it resets with NEXT_STEP whatever is asked: GymnasiumEnv.same_step_reset makes up for it.
        return gymnasium.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point")
    return gymnasium.vector.SyncVectorEnv([make] * num_envs, autoreset_mode=same_step)


def make(env_id: str, num_envs: int, device: torch.device | str, seed: int, asynchronous: bool = False) -> GymnasiumEnv:
    """num_envs copies of env_id in Gymnasium on the CPU (in a process each if asynchronous), seeded once with `seed`,
    for comparison with make's."""
    return GymnasiumEnv(env_id, num_envs, device, seed, asynchronous)
