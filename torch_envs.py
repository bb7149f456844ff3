"""CartPole-v1, Acrobot-v1 and Pendulum-v1 (continuous actions) in PyTorch, with gymnax 1.0.1's dynamics, batched over environments on a torch device.

The PyTorch scripts can then train without JAX in the loop: each step is a handful of whole-batch tensor ops on
the device the network lives on, as a PyTorch user would write a GPU environment. A step reads nothing back to
the host (no .item(), no bool(tensor), no shape that depends on the data, selection by torch.where), so that it
can also run under torch.compile(fullgraph=True) and in a CUDA graph.

The arithmetic is gymnax's, line by line, in float32 (gymnax's default params, the same order of operations), so
a step from the same state agrees with gymnax's to float32 rounding; tests/test_torch_envs.py checks that against
gymnax itself. Not bit for bit: XLA fuses multiply-adds, turns a division by a constant into a multiplication and
computes cos and sin its own way. Acrobot's RK4 step is ill-conditioned at high speeds, where either float32 result
can stray a few 1e-2 from the exact one. The random streams differ: the reset distribution is gymnax's, not its draws.

make_gymnasium wraps Gymnasium's own vector environments on the CPU, as CleanRL trains, behind the same interface.
"""

import math
from types import SimpleNamespace
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import torch

import harness

ENVS = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1")


class CartPoleState(NamedTuple):
    """gymnax's CartPole EnvState, one entry per environment (float32; time int32)."""

    x: torch.Tensor
    x_dot: torch.Tensor
    theta: torch.Tensor
    theta_dot: torch.Tensor
    time: torch.Tensor


class AcrobotState(NamedTuple):
    """gymnax's Acrobot EnvState, one entry per environment (float32; time int32)."""

    joint_angle1: torch.Tensor
    joint_angle2: torch.Tensor
    velocity_1: torch.Tensor
    velocity_2: torch.Tensor
    time: torch.Tensor


class PendulumState(NamedTuple):
    """gymnax's Pendulum EnvState, one entry per environment (float32; time int32)."""

    theta: torch.Tensor
    theta_dot: torch.Tensor
    last_u: torch.Tensor
    time: torch.Tensor


class TorchEnv:
    """What the environments share: reset, the time limit and gymnax's auto-resetting step. A subclass gives
    step_env (gymnax's, without reset), get_obs and reset_state."""

    num_actions: int  # discrete: how many actions; continuous: the action's dimensions
    continuous = False
    observation_shape: tuple
    max_steps_in_episode = 500  # CartPole's and Acrobot's EnvParams' default

    def __init__(self, num_envs: int, device: torch.device | str = "cpu"):
        self.num_envs = num_envs
        self.device = torch.device(device)

    def uniform(self, low: float, high: float, generator: torch.Generator | None = None) -> torch.Tensor:
        """(4, num_envs) draws in [low, high), scaled as jax.random.uniform scales its [0, 1) floats."""
        u = torch.rand((4, self.num_envs), generator=generator, device=self.device)
        return u * (high - low) + low

    def reset(self, generator: torch.Generator | None = None):
        """A fresh state for every environment and its observation: (obs, state)."""
        state = self.reset_state(generator)
        return self.get_obs(state), state

    def is_truncated(self, state) -> torch.Tensor:
        # gymnax 1.0 checks the state the step reached: the 500th step of an episode is truncated.
        return state.time >= self.max_steps_in_episode

    def step(self, state, action: torch.Tensor):
        """gymnax's Environment.step: step_env, then the environments that are done start afresh.

        Returns (obs, state, reward, terminated, truncated, final_obs): final_obs is the observation the step
        reached before any reset (gymnax's info["final_observation"]), which a truncated episode bootstraps from;
        obs is the reset observation where done and final_obs elsewhere. As gymnax does, reset states are drawn for
        the whole batch and selected, so that the step's shapes never depend on which episodes ended; they come
        from torch's default generator, which torch.compile can trace.
        """
        obs_st, state_st, reward, terminated, truncated = self.step_env(state, action)
        done = terminated | truncated
        obs_re, state_re = self.reset()
        state = type(state_st)(*(torch.where(done, re, st) for re, st in zip(state_re, state_st)))
        obs = torch.where(done[:, None], obs_re, obs_st)
        return obs, state, reward, terminated, truncated, obs_st


class CartPole(TorchEnv):
    """gymnax's CartPole-v1 (classic_control/cartpole.py), Euler integration."""

    num_actions = 2
    observation_shape = (4,)
    # gymnax's EnvParams defaults
    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    total_mass = 1.0 + 0.1
    length = 0.5
    polemass_length = 0.05
    force_mag = 10.0
    tau = 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4

    def reset_state(self, generator=None) -> CartPoleState:
        x, x_dot, theta, theta_dot = self.uniform(-0.05, 0.05, generator)
        time = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        return CartPoleState(x, x_dot, theta, theta_dot, time)

    def get_obs(self, state: CartPoleState) -> torch.Tensor:
        return torch.stack([state.x, state.x_dot, state.theta, state.theta_dot], dim=-1)

    def is_terminated(self, state: CartPoleState) -> torch.Tensor:
        # float32 against the thresholds rounded to float32, as jax compares (x = float32(2.4) is inside)
        done1 = (state.x < -self.x_threshold) | (state.x > self.x_threshold)
        done2 = (state.theta < -self.theta_threshold_radians) | (state.theta > self.theta_threshold_radians)
        return done1 | done2

    def step_env(self, state: CartPoleState, action: torch.Tensor):
        """gymnax's step_env without reset: (obs, state, reward, terminated, truncated)."""
        # The reward is 1 unless the state stepped from was already terminal: gymnax's "reward based on
        # termination in the previous step". After an auto-reset that never happens, so rollouts always get 1.
        prev_terminal = self.is_terminated(state)
        action = action.to(torch.float32)
        force = self.force_mag * action - self.force_mag * (1 - action)
        costheta = torch.cos(state.theta)
        sintheta = torch.sin(state.theta)

        temp = (force + self.polemass_length * state.theta_dot**2 * sintheta) / self.total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / self.total_mass)
        )
        xacc = temp - self.polemass_length * thetaacc * costheta / self.total_mass

        x = state.x + self.tau * state.x_dot
        x_dot = state.x_dot + self.tau * xacc
        theta = state.theta + self.tau * state.theta_dot
        theta_dot = state.theta_dot + self.tau * thetaacc

        reward = 1.0 - prev_terminal.to(torch.float32)
        state = CartPoleState(x, x_dot, theta, theta_dot, state.time + 1)
        # gymnax 1.0.1 keeps the two apart: terminated is the pole or cart out of bounds whatever the time, so
        # both are true when that happens on an episode's 500th step.
        return self.get_obs(state), state, reward, self.is_terminated(state), self.is_truncated(state)


class Acrobot(TorchEnv):
    """gymnax's Acrobot-v1 (classic_control/acrobot.py): the 'book' dynamics, one RK4 step, no torque noise."""

    num_actions = 3
    observation_shape = (6,)
    # gymnax's EnvParams defaults (available_torque = [-1, 0, +1]; torque_noise_max = 0: no noise)
    dt = 0.2
    link_length_1 = 1.0
    link_length_2 = 1.0
    link_mass_1 = 1.0
    link_mass_2 = 1.0
    link_com_pos_1 = 0.5
    link_com_pos_2 = 0.5
    link_moi = 1.0
    max_vel_1 = 4 * math.pi
    max_vel_2 = 9 * math.pi

    def reset_state(self, generator=None) -> AcrobotState:
        joint_angle1, joint_angle2, velocity_1, velocity_2 = self.uniform(-0.1, 0.1, generator)
        time = torch.zeros(self.num_envs, dtype=torch.int32, device=self.device)
        return AcrobotState(joint_angle1, joint_angle2, velocity_1, velocity_2, time)

    def get_obs(self, state: AcrobotState) -> torch.Tensor:
        return torch.stack(
            [
                torch.cos(state.joint_angle1),
                torch.sin(state.joint_angle1),
                torch.cos(state.joint_angle2),
                torch.sin(state.joint_angle2),
                state.velocity_1,
                state.velocity_2,
            ],
            dim=-1,
        )

    def is_terminated(self, state: AcrobotState) -> torch.Tensor:
        # the tip above the line one link's length over the pivot
        return -torch.cos(state.joint_angle1) - torch.cos(state.joint_angle2 + state.joint_angle1) > 1.0

    def dsdt(self, theta1, theta2, dtheta1, dtheta2, a):
        """gymnax's dsdt: the time derivative of (theta1, theta2, dtheta1, dtheta2) under torque a."""
        m1, m2 = self.link_mass_1, self.link_mass_2
        l1 = self.link_length_1
        lc1, lc2 = self.link_com_pos_1, self.link_com_pos_2
        i1, i2 = self.link_moi, self.link_moi
        g = 9.8
        d1 = m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * torch.cos(theta2)) + i1 + i2
        d2 = m2 * (lc2**2 + l1 * lc2 * torch.cos(theta2)) + i2
        # cos(angle - pi/2), not sin(angle): gymnax's float32 rounding
        phi2 = m2 * lc2 * g * torch.cos(theta1 + theta2 - math.pi / 2.0)
        phi1 = (
            -m2 * l1 * lc2 * dtheta2**2 * torch.sin(theta2)
            - 2 * m2 * l1 * lc2 * dtheta2 * dtheta1 * torch.sin(theta2)
            + (m1 * lc1 + m2 * l1) * g * torch.cos(theta1 - math.pi / 2)
            + phi2
        )
        ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1**2 * torch.sin(theta2) - phi2) / (
            m2 * lc2**2 + i2 - d2**2 / d1
        )
        ddtheta1 = -(d2 * ddtheta2 + phi1) / d1
        return dtheta1, dtheta2, ddtheta1, ddtheta2

    def rk4(self, y0, a):
        """gymnax's rk4: a single Runge-Kutta step of dt (Gymnasium's integrates the same step)."""
        dt2 = self.dt / 2.0
        k1 = self.dsdt(*y0, a)
        k2 = self.dsdt(*(y + dt2 * k for y, k in zip(y0, k1)), a)
        k3 = self.dsdt(*(y + dt2 * k for y, k in zip(y0, k2)), a)
        k4 = self.dsdt(*(y + self.dt * k for y, k in zip(y0, k3)), a)
        return [y + self.dt / 6.0 * (q1 + 2 * q2 + 2 * q3 + q4) for y, q1, q2, q3, q4 in zip(y0, k1, k2, k3, k4)]

    def step_env(self, state: AcrobotState, action: torch.Tensor):
        """gymnax's step_env without reset: (obs, state, reward, terminated, truncated)."""
        torque = action.to(torch.float32) - 1.0  # available_torque[action], [-1, 0, +1]; exact for 0, 1, 2
        ns = self.rk4((state.joint_angle1, state.joint_angle2, state.velocity_1, state.velocity_2), torque)
        joint_angle1 = wrap(ns[0], -math.pi, math.pi)
        joint_angle2 = wrap(ns[1], -math.pi, math.pi)
        velocity_1 = torch.clamp(ns[2], -self.max_vel_1, self.max_vel_1)
        velocity_2 = torch.clamp(ns[3], -self.max_vel_2, self.max_vel_2)
        state = AcrobotState(joint_angle1, joint_angle2, velocity_1, velocity_2, state.time + 1)
        terminated = self.is_terminated(state)
        reward = -1.0 * (1.0 - terminated.to(torch.float32))  # -1 a step until the tip is up (then -0.0)
        # As CartPole's: terminated whatever the time, truncated from the time alone; both can be true at once.
        return self.get_obs(state), state, reward, terminated, self.is_truncated(state)


class Pendulum(TorchEnv):
    """gymnax's Pendulum-v1 (classic_control/pendulum.py): a torque in [-2, 2] on a pendulum that starts anywhere; the
    reward is minus the cost of its angle from upright, its speed and the torque. Never terminated: 200 steps a run."""

    num_actions = 1  # the torque
    continuous = True
    observation_shape = (3,)
    max_steps_in_episode = 200
    # gymnax's EnvParams defaults
    max_speed = 8.0
    max_torque = 2.0
    dt = 0.05
    g = 10.0
    m = 1.0
    l = 1.0  # noqa: E741

    def reset_state(self, generator=None) -> PendulumState:
        # angle in [-pi, pi), speed in [-1, 1), scaled as jax.random.uniform(minval=-high, maxval=high) scales its floats
        high = torch.tensor([[math.pi], [1.0]], device=self.device)
        theta, theta_dot = torch.rand((2, self.num_envs), generator=generator, device=self.device) * (2 * high) - high
        zeros = torch.zeros(self.num_envs, device=self.device)
        return PendulumState(theta, theta_dot, zeros, zeros.to(torch.int32))

    def get_obs(self, state: PendulumState) -> torch.Tensor:
        return torch.stack([torch.cos(state.theta), torch.sin(state.theta), state.theta_dot], dim=-1)

    def step_env(self, state: PendulumState, action: torch.Tensor):
        """gymnax's step_env without reset: (obs, state, reward, terminated, truncated)."""
        u = action.to(torch.float32).squeeze(-1).clamp(-self.max_torque, self.max_torque)  # clipped here, as gymnax does
        reward = -(angle_normalize(state.theta) ** 2 + 0.1 * state.theta_dot**2 + 0.001 * (u**2))
        theta_dot = state.theta_dot + (
            (3 * self.g / (2 * self.l) * torch.sin(state.theta) + 3.0 / (self.m * self.l**2) * u) * self.dt
        )
        theta_dot = theta_dot.clamp(-self.max_speed, self.max_speed)
        state = PendulumState(state.theta + theta_dot * self.dt, theta_dot, u, state.time + 1)
        return self.get_obs(state), state, reward, torch.zeros_like(reward, dtype=torch.bool), self.is_truncated(state)


def angle_normalize(x: torch.Tensor) -> torch.Tensor:
    """gymnax's (and Gymnasium's) angle into [-pi, pi): % takes the divisor's sign in torch as in jax.numpy."""
    return ((x + math.pi) % (2 * math.pi)) - math.pi


def wrap(x: torch.Tensor, m: float, big_m: float) -> torch.Tensor:
    """gymnax's wrap into [m, big_m): the same float32 arithmetic (big_m itself wraps to m). At an odd multiple of
    pi, where the quotient lies within rounding of an integer, this and XLA's fused version may land at opposite
    ends: the same angle."""
    diff = big_m - m
    go_up = (x < m).to(x.dtype)
    go_down = (x >= big_m).to(x.dtype)
    how_often = go_up * torch.ceil((m - x) / diff) + go_down * torch.floor((x - big_m) / diff + 1)
    return x - how_often * diff * go_down + how_often * diff * go_up


def make(env_id: str, num_envs: int, device: torch.device | str = "cpu") -> TorchEnv:
    """num_envs copies of env_id on device, stepped as one batch."""
    envs = {"CartPole-v1": CartPole, "Acrobot-v1": Acrobot, "Pendulum-v1": Pendulum}
    if env_id not in envs:
        raise ValueError(f"unsupported env id {env_id!r}; torch_envs supports {', '.join(ENVS)}")
    return envs[env_id](num_envs, device)


class GymnasiumEnv:
    """Gymnasium's vector environment on the CPU behind TorchEnv's interface: the state is None (Gymnasium keeps
    its own), actions go to NumPy and observations come back as float32 tensors on `device`, every step."""

    def __init__(self, env_id: str, num_envs: int, device: torch.device | str, seed: int):
        import gymnasium

        if env_id not in ENVS:
            raise ValueError(f"unsupported env id {env_id!r}; make_gymnasium supports {', '.join(ENVS)}")
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


def make_gymnasium(env_id: str, num_envs: int, device: torch.device | str, seed: int) -> GymnasiumEnv:
    """num_envs copies of env_id in Gymnasium on the CPU, seeded once with `seed`, for comparison with make's."""
    return GymnasiumEnv(env_id, num_envs, device, seed)


# What the PPO scripts step: either kind of environment behind the interface of their gymnax adapter (GymnaxEnvs),
# with each env's episode so far in the state, so that a step names the episodes it ended.
class EpisodeStats(NamedTuple):  # per env: the return and length of its episode so far, or of one that just ended
    returns: torch.Tensor
    lengths: torch.Tensor


class EnvStep(NamedTuple):  # what a step of every env gives besides the next observation
    reward: torch.Tensor
    terminated: torch.Tensor
    truncated: torch.Tensor
    final_obs: torch.Tensor  # the observation reached before any auto-reset: its value bootstraps a truncation
    finished: EpisodeStats  # the episodes that ended on this step (0 where none did)


class PPOState(NamedTuple):
    env_state: object
    episode: EpisodeStats


class PPOEnvs:
    """reset(seed) -> (state, obs), step(state, action) -> (state, obs, EnvStep), stack(steps): every field of a
    rollout's steps stacked on a leading axis. Whole-batch ops with no host read, as the environments' own step, so
    that the step can be compiled whole with the policy."""

    def __init__(self, envs: TorchEnv | GymnasiumEnv):
        self.envs, self.num_envs, self.num_actions, self.continuous = envs, envs.num_envs, envs.num_actions, envs.continuous

    def reset(self, seed: int):
        # A generator of its own: torch's, which the network's init draws from next, stays as the gymnax backend
        # leaves it (the same initial parameters). Gymnasium's draws are its own, seeded when it was made.
        obs, env_state = self.envs.reset(generator=torch.Generator(self.envs.device).manual_seed(seed))
        zeros = lambda dtype: torch.zeros(self.num_envs, dtype=dtype, device=self.envs.device)
        return PPOState(env_state, EpisodeStats(zeros(torch.float32), zeros(torch.int32))), obs

    def step(self, state: PPOState, action: torch.Tensor):
        obs, env_state, reward, terminated, truncated, final_obs = self.envs.step(state.env_state, action)
        done = terminated | truncated
        returns, lengths = state.episode.returns + reward, state.episode.lengths + 1
        finished = EpisodeStats(torch.where(done, returns, 0.0), torch.where(done, lengths, 0))
        episode = EpisodeStats(torch.where(done, 0.0, returns), torch.where(done, 0, lengths))
        return PPOState(env_state, episode), obs, EnvStep(reward, terminated, truncated, final_obs, finished)

    @staticmethod
    def stack(steps: list):
        return torch.utils._pytree.tree_map(lambda *xs: torch.stack(xs), *steps)  # (num_steps, num_envs) a field


def make_for_ppo(backend: str, env_id: str, num_envs: int, device: torch.device | str, seed: int) -> PPOEnvs:
    """The PPO scripts' environments on --env-backend torch (make's) or gymnasium (make_gymnasium's)."""
    envs = make(env_id, num_envs, device) if backend == "torch" else make_gymnasium(env_id, num_envs, device, seed)
    return PPOEnvs(envs)


# What the SAC torch scripts step on --env-backend torch or gymnasium: the interface of their gymnax adapter.
class SACEnvs(PPOEnvs):
    """reset(seed) -> (state, obs); step(state, action) -> (state, obs, reward, terminated (float), final_obs);
    tally(state) -> (state, the episodes that ended since the last tally: their count, returns and lengths summed).
    Whole-batch ops with no host read until tally, which runs after the timer. `space`: the action bounds."""

    def __init__(self, envs: TorchEnv | GymnasiumEnv, low: float, high: float):
        super().__init__(envs)
        shape = (envs.num_actions,)
        self.space = SimpleNamespace(low=np.full(shape, low, np.float32), high=np.full(shape, high, np.float32), shape=shape)
        self.bounds = torch.full(shape, low, device=envs.device), torch.full(shape, high, device=envs.device)  # no copy a step

    def no_episodes(self) -> dict:
        zero = lambda dtype: torch.zeros((), dtype=dtype, device=self.envs.device)
        return dict(episodes=zero(torch.int32), return_sum=zero(torch.float32), length_sum=zero(torch.int32))

    def reset(self, seed: int):
        state, obs = super().reset(seed)
        return (state, self.no_episodes()), obs

    def step(self, state: tuple, action: torch.Tensor):
        state, ended = state
        state, obs, out = super().step(state, torch.clamp(action, *self.bounds))  # clipped to the bounds, as gymnax's
        finished = out.finished
        counts = dict(
            episodes=(finished.lengths > 0).sum(), return_sum=finished.returns.sum(), length_sum=finished.lengths.sum()
        )
        ended = {k: ended[k] + counts[k].to(ended[k].dtype) for k in ended}
        return (state, ended), obs, out.reward, out.terminated.to(torch.float32), out.final_obs

    def tally(self, state: tuple):
        return (state[0], self.no_episodes()), {k: v.item() for k, v in state[1].items()}


def make_for_sac(backend: str, env_id: str, num_envs: int, device: torch.device | str, seed: int, jax_device=None):
    """The SAC torch scripts' environments on --env-backend: gymnax's (GymnaxEnvs, on jax_device), torch_envs.py's or
    Gymnasium's (SACEnvs, their actions continuous, their bounds Pendulum-v1's torque: [-2, 2])."""
    if backend == "gymnax":
        return GymnaxEnvs(env_id, num_envs, jax_device)
    envs = make(env_id, num_envs, device) if backend == "torch" else make_gymnasium(env_id, num_envs, device, seed)
    if not envs.continuous:
        raise ValueError(f"{env_id} has discrete actions; SAC needs continuous ones")
    return SACEnvs(envs, -Pendulum.max_torque, Pendulum.max_torque)


# gymnax's environments stepped from torch (the SAC torch scripts' default), behind SACEnvs' interface.
class GymnaxState(NamedTuple):  # JAX arrays, on the JAX device
    env_state: object
    episode: "harness.EpisodeStats"  # (harness.py) of each env's episode so far
    ended: dict  # the episodes that ended since the last tally: their count, returns and lengths summed
    key: jax.Array


class GymnaxEnvs:
    """num_envs of gymnax's environments, stepped from torch, as ppo_torch.py's: reset(seed) -> (state, obs),
    step(state, action) -> (state, obs, reward, terminated, final_obs), a jitted JAX call whose outputs cross by DLPack without a copy; the
    episodes that end are counted in JAX, and tally(state) hands them over (after the timer)."""

    def __init__(self, env_id: str, num_envs: int, jax_device):
        self.env, self.env_params = harness.make_env(env_id)
        self.num_envs, self.jax_device = num_envs, jax_device
        self.space = self.env.action_space(self.env_params)
        self.jax_step = jax.jit(self.step_envs)
        self.jax_tally = jax.jit(lambda state: (state._replace(ended=jax.tree.map(jnp.zeros_like, state.ended)), state.ended))
        # Neither allocator knows the other's stream: a buffer handed over and freed could be reused while a kernel queued
        # on the other stream still reads it. An iteration's are kept to the next one's end, past its iteration's sync.
        self.handed_over, self.previous = [], []

    def reset(self, seed: int):
        key, _, reset_key = jax.random.split(jax.random.key(seed), 3)  # as the JAX script splits it: the same worlds
        reset = jax.vmap(self.env.reset, in_axes=(0, None))  # one key per env; the same params
        obs, env_state = reset(jax.random.split(reset_key, self.num_envs), self.env_params)
        episode = harness.EpisodeStats(jnp.zeros(self.num_envs), jnp.zeros(self.num_envs, jnp.int32))
        ended = dict(episodes=jnp.int32(0), return_sum=jnp.float32(0), length_sum=jnp.int32(0))
        # strongly typed (harness.py), and committed to the device from the start: either change would retrace the step
        state = GymnaxState(harness.strongly_typed(env_state), episode, ended, key)
        state, obs = jax.device_put((state, obs), self.jax_device)
        self.handed_over.append(obs)
        return state, torch.from_dlpack(obs)

    def step_envs(self, state: GymnaxState, action):
        """Step every env once (gymnax resets finished ones), in JAX: the state after it, the observation, the rest."""
        key, step_key = jax.random.split(state.key)
        keys, step = jax.random.split(step_key, self.num_envs), jax.vmap(self.env.step, in_axes=(0, 0, 0, None))
        action = harness.clipped(self.space, action)  # to the bounds, for the step
        obs, env_state, reward, terminated, truncated, info = step(keys, state.env_state, action, self.env_params)
        episode, finished = harness.count_episodes(state.episode, reward, jnp.logical_or(terminated, truncated))
        counts = dict(
            episodes=(finished.lengths > 0).sum(), return_sum=finished.returns.sum(), length_sum=finished.lengths.sum()
        )
        ended = jax.tree.map(jnp.add, state.ended, counts)
        output = (reward, terminated.astype(jnp.float32), info["final_observation"])
        return GymnaxState(env_state, episode, ended, key), obs, output

    def step(self, state: GymnaxState, action: torch.Tensor):
        # torch -> JAX, zero-copy; on GPU, jax.dlpack.from_dlpack makes JAX's stream wait for torch's current stream.
        state, obs, output = self.jax_step(state, jax.dlpack.from_dlpack(action))
        self.handed_over += [action, obs, *output]
        # JAX -> torch, zero-copy. JAX's __dlpack__ blocks until the buffer is ready on CPU; on GPU it makes
        # torch's current stream wait for it instead (no host sync).
        return state, *map(torch.from_dlpack, (obs, *output))  # obs, reward, terminated (float), final_obs

    def tally(self, state: GymnaxState):
        """The episodes that ended since the last tally (JAX arrays), and the state counting from zero again."""
        self.previous, self.handed_over = self.handed_over, []
        return self.jax_tally(state)
