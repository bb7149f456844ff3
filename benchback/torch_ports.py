"""CartPole-v1, Acrobot-v1 and Pendulum-v1 (continuous actions) in PyTorch, with gymnax 1.0.1's dynamics, batched over environments on a torch device.

The PyTorch scripts can then train without JAX in the loop: each step is a handful of whole-batch tensor ops on
the device the network lives on, as a PyTorch user would write a GPU environment. A step reads nothing back to
the host (no .item(), no bool(tensor), no shape that depends on the data, selection by torch.where), so that it
can also run under torch.compile(fullgraph=True) and in a CUDA graph.

The arithmetic is gymnax's, line by line, in float32 (gymnax's default params, the same order of operations), so
a step from the same state agrees with gymnax's to float32 rounding; tests/test_torch_ports.py checks that against
gymnax itself. Not bit for bit: XLA fuses multiply-adds, turns a division by a constant into a multiplication and
computes cos and sin its own way. Acrobot's RK4 step is ill-conditioned at high speeds, where either float32 result
can stray a few 1e-2 from the exact one. The random streams differ: the reset distribution is gymnax's, not its draws.

gymnasium_envs.py wraps Gymnasium's own vector environments on the CPU, as CleanRL trains, behind the same interface;
torch_envs.PortEnvs puts either behind the interface the torch scripts step.
"""

import math
from typing import NamedTuple

import torch

IDS = ("CartPole-v1", "Acrobot-v1", "Pendulum-v1")


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
        raise ValueError(f"unsupported env id {env_id!r}; torch_ports has {', '.join(IDS)}")
    return envs[env_id](num_envs, device)
