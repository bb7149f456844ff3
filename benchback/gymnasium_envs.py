"""Gymnasium's vector environments on the CPU, as CleanRL trains, behind torch_ports.py's interface (reset, and a step
that resets what ended in the same step): the --env-backend gymnasium the torch scripts compare gymnax's with."""

import torch

from benchback import torch_ports


class GymnasiumEnv:
    """Gymnasium's vector environment on the CPU behind TorchEnv's interface: the state is None (Gymnasium keeps
    its own), actions go to NumPy and observations come back as float32 tensors on `device`, every step."""

    def __init__(self, env_id: str, num_envs: int, device: torch.device | str, seed: int):
        import gymnasium

        if env_id not in torch_ports.IDS:
            raise ValueError(f"unsupported env id {env_id!r}; gymnasium_envs has {', '.join(torch_ports.IDS)}")
        self.num_envs = num_envs
        self.device = torch.device(device)
        self.seed = seed  # for the first reset only: one seeded stream for the whole run
        spec = gymnasium.spec(env_id)
        # CartPole has a NumPy-vectorized version (CartPoleVectorEnv). Gymnasium 1.3's make_vec refuses
        # vector_kwargs for it, and it resets with NEXT_STEP whatever is asked: the step after an episode ends
        # returns the reset observation with reward 0 and both flags false, a step the agent's action is lost on.
        # same_step_reset below does that reset at once instead, as that next step would have (the same draws from
        # its generator, its step counter back to 0): episodes and their 500-step limit are Gymnasium's own.
        self.vectorized = spec.vector_entry_point is not None
        if self.vectorized:
            self.envs = gymnasium.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point")
        else:
            # one Python environment per copy; SAME_STEP resets an ended episode on the step that ends it, with its
            # last observation in info["final_obs"] (where info["_final_obs"])
            self.envs = gymnasium.make_vec(
                env_id,
                num_envs,
                vectorization_mode="sync",
                vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP},
            )
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
        """What CartPoleVectorEnv.step does first on its next call for the environments in `done`, done now."""
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


def make(env_id: str, num_envs: int, device: torch.device | str, seed: int) -> GymnasiumEnv:
    """num_envs copies of env_id in Gymnasium on the CPU, seeded once with `seed`, for comparison with make's."""
    return GymnasiumEnv(env_id, num_envs, device, seed)
