"""benchback/torch_ports.py against gymnax 1.0.1 (JAX, on the CPU): the same steps from the same states, the thresholds, the clips
and the time limit at their edges, auto-reset over long rollouts, the reset distribution; and make_gymnasium's wrapping
of Gymnasium's vector environments (same-step reset, final observations, the time limit)."""

import functools
import math

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from gymnax.environments import spaces
from gymnax.environments.classic_control import acrobot, cartpole, pendulum
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from benchback import gymnasium_envs, torch_ports

# How far torch_ports' float32 step may be from gymnax's: float32 rounding, ATOL + RTOL * |gymnax's value| +
# K * (the step's response, in float64, to a 1-ulp float32 change of the state stepped from: max over random signs).
# The last term is nil for CartPole; Acrobot's RK4 stages square velocities that grow within the step, and from the
# fastest states a 1-ulp change of the state moves the result by up to 1e-2: gymnax's own float32 step is that far
# from float64 arithmetic there, and the test checks that gymnax's float32 error keeps within the same bound. Where
# the step is well conditioned (all of CartPole's and Pendulum's, Acrobot below a speed of 10) ATOL + RTOL alone must
# hold: Pendulum's angles up to 1000 round alike in both (measured: within a quarter of it). In float64 both compute
# the same formulas: there they agree to F64_TOL (measured: 1e-16 on CartPole, 5e-11 relative 3e-12 on Acrobot, 4e-15
# on Pendulum).
RTOL, ATOL, K = 1e-5, 1e-6, 8
F64_TOL = 1e-9
EPS32 = float(np.finfo(np.float32).eps)
GYMNAX_STATE = {"CartPole-v1": cartpole.EnvState, "Acrobot-v1": acrobot.EnvState, "Pendulum-v1": pendulum.EnvState}
# reset_env: each float field of the state, in order, uniform in [-r, r) (Pendulum's last torque: r = 0, none yet)
RESET_RANGE = {"CartPole-v1": (0.05,) * 4, "Acrobot-v1": (0.1,) * 4, "Pendulum-v1": (math.pi, 1.0, 0.0)}
MAX_STEPS = {"CartPole-v1": 500, "Acrobot-v1": 500, "Pendulum-v1": 200}  # the time limits, gymnax's and Gymnasium's
N = 10_000  # states a step test draws; gymnax runs every batch padded to this size, compiled once per dtype
X_MAX, THETA_MAX = 2.4, 12 * 2 * math.pi / 360  # CartPole's thresholds
MAX_SPEED, MAX_TORQUE = 8.0, 2.0  # Pendulum's clips


@functools.cache
def gymnax_env(env_id: str):
    """gymnax's environment, its default params, and run(fields, action): its step_env vmapped over states and
    actions and jitted, the params passed in as the scripts pass them, with Environment.step's truncation check on the
    state reached; in float64 when the fields are (JAX's x64 mode, for that call only). Returns NumPy arrays (obs,
    state, reward, terminated, truncated)."""
    env, params = gymnax.make(env_id)

    def step_env(key, state, action, params):
        obs, state, reward, terminated, _ = env.step_env(key, state, action, params)
        return obs, state, reward, terminated, env.is_truncated(state, params)

    vmapped = jax.jit(jax.vmap(step_env, in_axes=(0, 0, 0, None)))

    def run(fields: dict, action: np.ndarray):
        n = len(action)
        pad = lambda x: np.concatenate([x, np.zeros((N - n, *x.shape[1:]), x.dtype)])  # noqa: E731
        keys = jax.random.split(jax.random.key(0), N)
        with jax.enable_x64(any(v.dtype == np.float64 for v in fields.values())):
            state = GYMNAX_STATE[env_id](**{k: jnp.asarray(pad(v)) for k, v in fields.items()})
            out = vmapped(keys, state, jnp.asarray(pad(action)), params)
            return jax.tree.map(lambda x: np.asarray(x)[:n], out)

    return env, params, run


def gymnax_step(env_id: str, fields: dict, action: np.ndarray):
    """gymnax's own Environment.step (the base class's: step_env, then a reset where done, with the observation reached
    in info["final_observation"]), vmapped over states and actions and jitted, from float32/int32 fields: NumPy (obs,
    state, reward, terminated, truncated, info)."""
    env, params, _ = gymnax_env(env_id)
    step = jax.jit(jax.vmap(env.step, in_axes=(0, 0, 0, None)))
    keys = jax.random.split(jax.random.key(0), len(action))
    state = GYMNAX_STATE[env_id](**{k: jnp.asarray(v) for k, v in fields.items()})
    return jax.tree.map(np.asarray, step(keys, state, jnp.asarray(action), params))


def torch_state(env, fields: dict):
    """A torch_ports state from NumPy fields named as gymnax's."""
    return type(env.reset()[1])(**{k: torch.as_tensor(v) for k, v in fields.items()})


def as_float64(fields: dict) -> dict:
    return {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in fields.items()}


def random_states(env_id: str, n: int, rng) -> dict:
    """n states covering and exceeding what an episode reaches, times from 0 to the limit's last step (499 or 199: that
    one and the one before forced in two tenths), as float32/int32 fields named as gymnax's."""
    if env_id == "CartPole-v1":
        # an episode ends within one step past |x| = 2.4 and |theta| = 0.21
        fields = dict(
            x=rng.uniform(-3, 3, n),
            x_dot=rng.uniform(-6, 6, n),
            theta=rng.uniform(-0.4, 0.4, n),
            theta_dot=rng.uniform(-6, 6, n),
        )
    elif env_id == "Acrobot-v1":
        # angles wrap into [-pi, pi), speeds clip at 4 pi and 9 pi: draw a quarter beyond
        fields = dict(
            joint_angle1=rng.uniform(-1.25 * np.pi, 1.25 * np.pi, n),
            joint_angle2=rng.uniform(-1.25 * np.pi, 1.25 * np.pi, n),
            velocity_1=rng.uniform(-1.25 * 4 * np.pi, 1.25 * 4 * np.pi, n),
            velocity_2=rng.uniform(-1.25 * 9 * np.pi, 1.25 * 9 * np.pi, n),
        )
    else:
        # the angle is never wrapped, only the reward's copy of it: a tenth at multiples of pi (odd and even, up to
        # +-101 pi), a tenth anywhere up to +-1000, the rest within a turn and a quarter; the speed clips at 8: draw
        # half again beyond; the last torque is only ever the step's output
        kind = rng.integers(0, 10, n)
        theta = rng.uniform(-1.25 * np.pi, 1.25 * np.pi, n)
        theta = np.where(kind == 0, np.pi * rng.integers(-101, 102, n), theta)
        theta = np.where(kind == 1, rng.uniform(-1000, 1000, n), theta)
        fields = dict(
            theta=theta,
            theta_dot=rng.uniform(-1.5 * MAX_SPEED, 1.5 * MAX_SPEED, n),
            last_u=rng.uniform(-MAX_TORQUE, MAX_TORQUE, n),
        )
    fields = {k: v.astype(np.float32) for k, v in fields.items()}
    time = rng.integers(0, MAX_STEPS[env_id], n)
    time[: n // 10], time[n // 10 : n // 5] = MAX_STEPS[env_id] - 1, MAX_STEPS[env_id] - 2
    return {**fields, "time": time.astype(np.int32)}


def random_actions(env, n: int, rng) -> np.ndarray:
    """n actions covering and exceeding the action space: discrete, each action (int32); continuous, torques uniform
    on [-3, 3), a tenth at +-2 exactly and a tenth at +-50, the step's clip to [-2, 2] on both sides (float32, (n, 1))."""
    if not env.continuous:
        return rng.integers(0, env.num_actions, n).astype(np.int32)
    u, kind = rng.uniform(-1.5 * MAX_TORQUE, 1.5 * MAX_TORQUE, n), rng.integers(0, 10, n)
    u = np.where(kind == 0, np.sign(u) * MAX_TORQUE, np.where(kind == 1, np.sign(u) * 50, u))
    return u.astype(np.float32)[:, None]


def gap(name: str, a, b) -> np.ndarray:
    """|a - b|, for an angle modulo 2 pi: a step that ends within rounding of +-pi may wrap to either end."""
    d = np.asarray(a, np.float64) - np.asarray(b, np.float64)
    return np.abs((d + np.pi) % (2 * np.pi) - np.pi) if name.startswith("joint_angle") else np.abs(d)


def outputs(obs, state, reward=None) -> dict:
    """A step's floats by name, as NumPy: the observation, the state's float fields (a state of either library; not
    Pendulum's last torque, the clipped action, compared exactly) and the reward where given (Pendulum's, a float of
    the state; the others' are 0, 1 or -1, compared exactly)."""
    names = ("x", "x_dot", "theta", "theta_dot", "joint_angle1", "joint_angle2", "velocity_1", "velocity_2")
    floats = {"obs": np.asarray(obs), **{name: np.asarray(getattr(state, name)) for name in names if hasattr(state, name)}}
    return floats if reward is None else {**floats, "reward": np.asarray(reward)}


def sensitivity(env, fields: dict, action: np.ndarray) -> dict:
    """Per output element, the float64 step's largest response to a 1-ulp float32 change of every state field (8
    draws of random signs): the scale of float32 rounding at that state."""
    fields = as_float64(fields)
    obs, state, reward, *_ = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    base = outputs(obs, state, reward)
    response = {name: np.zeros_like(v) for name, v in base.items()}
    rng = np.random.default_rng(99)
    for _ in range(8):
        nudged = {
            k: v * (1 + EPS32 * rng.choice([-1.0, 1.0], v.shape)) if v.dtype == np.float64 else v for k, v in fields.items()
        }
        for name, v in outputs(*env.step_env(torch_state(env, nudged), torch.as_tensor(action))[:3]).items():
            response[name] = np.maximum(response[name], gap(name, v, base[name]))
    return response


def line(fields) -> np.ndarray:
    """Acrobot's termination value (terminated where > 1), in float64."""
    a1, a2 = (np.asarray(fields[k], np.float64) for k in ("joint_angle1", "joint_angle2"))
    return -np.cos(a1) - np.cos(a2 + a1)


def pendulum_reward(theta, theta_dot, action) -> np.ndarray:
    """Pendulum's reward in float64, Gymnasium's formula: minus the cost of the angle from upright (normalized into
    [-pi, pi)), the speed and the clipped torque."""
    theta, theta_dot, u = (np.asarray(v, np.float64) for v in (theta, theta_dot, action))
    u = np.clip(u.reshape(theta.shape), -MAX_TORQUE, MAX_TORQUE)
    angle = (theta + np.pi) % (2 * np.pi) - np.pi
    return -(angle**2 + 0.1 * theta_dot**2 + 0.001 * u**2)


def reset_like(env_id, state) -> torch.Tensor:
    """Whether each environment's state could be a reset's (a torch_ports state, or its fields stacked over steps): time
    0 and every float field within RESET_RANGE (compared in float32, where pi rounds up)."""
    floats = torch.stack(list(state[:-1]), -1)
    return (floats.abs() <= torch.tensor(RESET_RANGE[env_id])).all(-1) & (state[-1] == 0)


def flag_flips_near_threshold(env_id, reached: dict, ours, theirs, within: float) -> np.ndarray:
    """Where the terminated flags differ: each must lie within `within` of the threshold; returns the mask."""
    flips = ours != theirs
    if env_id == "CartPole-v1":
        x, theta = (np.abs(reached[k].astype(np.float64)) for k in ("x", "theta"))
        near = (np.abs(x - X_MAX) < within) | (np.abs(theta - THETA_MAX) < within)
    elif env_id == "Acrobot-v1":
        near = np.abs(line(reached) - 1) < within
    else:  # Pendulum: never terminated, no threshold to be near
        near = np.zeros_like(flips)
    assert not (flips & ~near).any(), f"terminated differs away from the threshold at {np.flatnonzero(flips & ~near)}"
    return flips


@pytest.mark.parametrize("env_id", torch_ports.IDS)
def test_step_env_matches_gymnax_from_random_states(env_id):
    rng = np.random.default_rng(0)
    env = torch_ports.make(env_id, N, "cpu")
    fields = random_states(env_id, N, rng)
    action = random_actions(env, N, rng)
    run = gymnax_env(env_id)[2]
    float_reward = env_id == "Pendulum-v1"  # compared as the state is; the others' rewards exactly

    # float64: the same formulas, term for term (the actions as the scripts give them: Pendulum's float32 torques)
    obs, state, reward, terminated, truncated = env.step_env(torch_state(env, as_float64(fields)), torch.as_tensor(action))
    g_obs, g_state, g_reward, g_terminated, g_truncated = run(as_float64(fields), action)
    theirs = outputs(g_obs, g_state, g_reward if float_reward else None)
    for name, ours in outputs(obs, state, reward if float_reward else None).items():
        assert ours.dtype == theirs[name].dtype == np.float64
        worst = (gap(name, ours, theirs[name]) / (F64_TOL * (1 + np.abs(theirs[name])))).max()
        assert worst <= 1, f"float64 {name}: {worst:.3g} times the tolerance"
    assert np.array_equal(terminated.numpy(), g_terminated) and np.array_equal(truncated.numpy(), g_truncated)
    assert float_reward or np.array_equal(reward.numpy(), g_reward)

    # float32, as the scripts run it
    obs, state, reward, terminated, truncated = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    g_obs, g_state, g_reward, g_terminated, g_truncated = run(fields, action)
    g64 = theirs
    assert obs.dtype == reward.dtype == torch.float32 and terminated.dtype == truncated.dtype == torch.bool
    assert obs.shape == (N, *env.observation_shape) and reward.shape == terminated.shape == truncated.shape == (N,)
    assert state.time.dtype == torch.int32 == {np.int32: torch.int32}[g_state.time.dtype.type]
    assert np.array_equal(state.time.numpy(), fields["time"] + 1) and np.array_equal(g_state.time, fields["time"] + 1)
    assert torch.equal(obs, env.get_obs(state))
    response = sensitivity(env, fields, action)
    theirs = outputs(g_obs, g_state, g_reward if float_reward else None)
    slow = np.ones(N, bool)  # where the step is well conditioned: all of CartPole's and Pendulum's
    if env_id == "Acrobot-v1":
        slow = 1 + np.abs(fields["velocity_1"]) + np.abs(fields["velocity_2"]) < 10
    for name, ours in outputs(obs, state, reward if float_reward else None).items():
        assert ours.dtype == theirs[name].dtype == np.float32, name
        tight = ATOL + RTOL * np.abs(theirs[name].astype(np.float64))
        tol = tight + K * response[name]
        worst = (gap(name, ours, theirs[name]) / tol).max()
        assert worst <= 1, f"float32 {name}: {worst:.3g} times the rounding bound"
        assert (gap(name, theirs[name], g64[name]) <= tol).all(), f"gymnax's own float32 {name} strays further"
        assert (gap(name, ours, theirs[name])[slow] <= tight[slow]).all(), f"float32 {name} where well conditioned"
    if env_id == "Pendulum-v1":  # the last torque: the action clipped to [-2, 2], exactly
        clipped = np.clip(action[:, 0], -MAX_TORQUE, MAX_TORQUE)
        assert np.array_equal(state.last_u.numpy(), clipped) and np.array_equal(g_state.last_u, clipped)
        assert (np.abs(action) > MAX_TORQUE).any() and (np.abs(action) < MAX_TORQUE).any()

    # The flags: truncated exactly (an integer time), terminated exactly but where the state reached lies within
    # rounding of the threshold (none did here: a flip is a chance of ~1e-4 a state).
    assert np.array_equal(truncated.numpy(), g_truncated)
    assert truncated.numpy()[: N // 10].all() and not truncated.numpy()[N // 10 : N // 5].any()  # 499/199 and 498/198
    reached = {k: getattr(g_state, k) for k in state._fields}
    flips = flag_flips_near_threshold(
        env_id, reached, terminated.numpy(), g_terminated, 1e-5 if env_id == "CartPole-v1" else 1e-3
    )
    assert flips.sum() <= 2, flips.sum()
    if env_id == "Pendulum-v1":
        assert not terminated.numpy().any() and not g_terminated.any(), "Pendulum terminated"
    else:
        assert (g_terminated & g_truncated).any(), "no state both terminated and truncated: the split went untested"
    same = ~flips
    assert float_reward or np.array_equal(reward.numpy()[same], g_reward[same])
    if env_id == "CartPole-v1":  # 1 unless the state stepped from was out of bounds: some were, by construction
        prev_out = (np.abs(fields["x"]) > np.float32(X_MAX)) | (np.abs(fields["theta"]) > np.float32(THETA_MAX))
        assert np.array_equal(reward.numpy(), np.where(prev_out, 0.0, 1.0)) and prev_out.any() and not prev_out.all()
    elif env_id == "Acrobot-v1":  # -1 until the tip is up
        assert np.array_equal(reward.numpy(), np.where(terminated.numpy(), 0.0, -1.0))
    else:  # minus the cost of the state stepped from and of the clipped torque, to float32 rounding
        expected = pendulum_reward(fields["theta"], fields["theta_dot"], action)
        tol = ATOL + RTOL * np.abs(expected) + K * response["reward"]
        worst = (np.abs(reward.numpy() - expected) / tol).max()
        assert worst <= 1 and (reward.numpy() <= 0).all(), f"reward: {worst:.3g} times the rounding bound"

    # torch_ports' auto-resetting step from the same states: final_obs is step_env's observation; where not done the
    # observation and state are step_env's, where done a reset's.
    t_obs, t_state, t_reward, t_terminated, t_truncated, t_final = env.step(torch_state(env, fields), torch.as_tensor(action))
    assert torch.equal(t_final, obs) and torch.equal(t_reward, reward)
    assert torch.equal(t_terminated, terminated) and torch.equal(t_truncated, truncated)
    done = terminated | truncated
    assert torch.equal(t_obs[~done], obs[~done])
    for ours, stepped in zip(t_state, state):
        assert torch.equal(ours[~done], stepped[~done])
    assert reset_like(env_id, t_state)[done].all()
    assert 0.1 < done.float().mean() < 0.9


def test_cartpole_edges_and_gymnax_step():
    """x at +-2.4 and theta at +-12 degrees, just inside and just outside (float32 neighbours, and 1e-3 off), with
    zero speeds so that the step leaves them in place; the time limit's last steps; and the same states through
    gymnax's own Environment.step (the base class's, Acrobot's too), for the flags and the final observation."""
    env_id = "CartPole-v1"
    x_max, theta_max = np.float32(X_MAX), np.float32(THETA_MAX)

    def around(limit):
        inside = [limit, np.nextafter(limit, np.float32(0)), limit - np.float32(1e-3)]
        outside = [np.nextafter(limit, np.float32(np.inf)), limit + np.float32(1e-3)]
        values = np.array(inside + outside + [-v for v in inside + outside], np.float32)
        return values, np.array([False] * 3 + [True] * 2 + [False] * 3 + [True] * 2)

    xs, x_out = around(x_max)
    thetas, theta_out = around(theta_max)
    zeros = np.zeros(len(xs), np.float32)
    fields = dict(
        x=np.concatenate([xs, zeros]),
        x_dot=np.concatenate([zeros, zeros]),
        theta=np.concatenate([zeros, thetas]),
        theta_dot=np.concatenate([zeros, zeros]),
    )
    n = len(fields["x"])
    out = np.concatenate([x_out, theta_out])
    times = [0, MAX_STEPS[env_id] - 2, MAX_STEPS[env_id] - 1]
    fields = {k: np.tile(v, len(times)) for k, v in fields.items()}
    fields["time"] = np.repeat(np.array(times, np.int32), n)
    out = np.tile(out, len(times))
    action = np.tile(np.array([0, 1], np.int32), len(out) // 2)

    env = torch_ports.make(env_id, len(out), "cpu")
    obs, state, reward, terminated, truncated = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    # the step moves neither x nor theta: each state is judged where it started
    assert np.array_equal(state.x.numpy(), fields["x"]) and np.array_equal(state.theta.numpy(), fields["theta"])
    assert np.array_equal(terminated.numpy(), out)
    assert np.array_equal(reward.numpy(), np.where(out, 0.0, 1.0))  # out of bounds before the step: no reward
    assert np.array_equal(truncated.numpy(), fields["time"] == MAX_STEPS[env_id] - 1)  # time 499 -> 500: truncated
    assert (terminated & truncated).any()  # out of bounds on the 500th step: both

    g_obs, g_state, g_reward, g_terminated, g_truncated, g_info = gymnax_step(env_id, fields, action)
    assert np.array_equal(terminated.numpy(), g_terminated) and np.array_equal(truncated.numpy(), g_truncated)
    assert np.array_equal(reward.numpy(), g_reward)
    t_obs, t_state, _, _, _, t_final = env.step(torch_state(env, fields), torch.as_tensor(action))
    assert np.array_equal(t_final.numpy(), g_info["final_observation"]) and torch.equal(t_final, obs)
    done = g_terminated | g_truncated
    assert np.array_equal(t_obs.numpy()[~done], g_obs[~done]) and (g_state.time[done] == 0).all()
    assert (t_state.time.numpy()[done] == 0).all() and (t_state.time.numpy()[~done] == g_state.time[~done]).all()


def test_acrobot_edges():
    """Speeds clipped at 4 pi and 9 pi, angles wrapped across +-pi, and the termination line."""
    env_id = "Acrobot-v1"
    env = torch_ports.make(env_id, 8, "cpu")
    gymnax_acrobot, params, run = gymnax_env(env_id)
    v1_max, v2_max = np.float32(4 * np.pi), np.float32(9 * np.pi)

    # Clipping: at rest with both links down, spinning a link past its bound keeps it past through the step.
    v1 = np.array([13.5, -13.5, 0, 0, 12.0, -12.0, 0, 0], np.float32)
    v2 = np.array([0, 0, 29.5, -29.5, 0, 0, 26.0, -26.0], np.float32)
    zeros = np.zeros(8, np.float32)
    fields = dict(joint_angle1=zeros, joint_angle2=zeros, velocity_1=v1, velocity_2=v2, time=np.zeros(8, np.int32))
    action = np.ones(8, np.int32)
    obs, state, *_ = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    g_state = run(fields, action)[1]
    clipped1, clipped2 = state.velocity_1.numpy()[:2], state.velocity_2.numpy()[2:4]
    assert np.array_equal(clipped1, [v1_max, -v1_max]) and np.array_equal(clipped2, [v2_max, -v2_max])
    assert np.array_equal(g_state.velocity_1[:2], clipped1) and np.array_equal(g_state.velocity_2[2:4], clipped2)
    # just within the bounds: not clipped (the step changes them by more than rounding, less than the gap)
    assert (np.abs(state.velocity_1.numpy()[4:6]) < v1_max).all() and (np.abs(state.velocity_2.numpy()[6:]) < v2_max).all()
    for name in state._fields[:4]:
        ours, theirs = getattr(state, name).numpy(), getattr(g_state, name)
        assert (gap(name, ours, theirs) <= ATOL + RTOL * np.abs(theirs)).all(), name
    assert np.array_equal(obs.numpy()[:, 4], state.velocity_1.numpy()) and np.array_equal(
        obs.numpy()[:, 5], state.velocity_2.numpy()
    )

    # Wrapping: torch_ports.wrap against gymnax's wrap on values at and across the ends of [-pi, pi), bit for bit but
    # where x is an odd multiple of pi to float32 rounding: there the count of turns, a floor or ceil of a quotient
    # within rounding of an integer, may differ by one (XLA fuses a multiply-add there) and the two land at the two
    # ends, -pi and just below pi: the same angle.
    pi32 = np.float32(np.pi)
    x = np.array(
        [pi32, -pi32, np.nextafter(pi32, 0), np.nextafter(-pi32, 0), np.nextafter(pi32, 4), np.nextafter(-pi32, -4)]
        + [0, 3.0, -3.0, 3.2, -3.2, 2 * np.pi, -2 * np.pi, 7.5, -7.5, 20.0, -20.0, 3 * np.pi, -3 * np.pi, 5 * np.pi],
        np.float32,
    )
    odd = np.abs(x) > 9  # the odd multiples of pi beyond the first
    ours = torch_ports.wrap(torch.as_tensor(x), -math.pi, math.pi).numpy()
    theirs = np.asarray(jax.jit(lambda v: acrobot.wrap(v, -jnp.pi, jnp.pi))(jnp.asarray(x)))
    assert np.array_equal(ours[~odd], theirs[~odd]), np.stack([x, ours, theirs])
    assert (gap("joint_angle", ours, theirs) <= 1e-6).all() and (gap("joint_angle", ours, x) <= 4e-6).all()
    assert (np.abs(ours) <= pi32 + 1e-6).all() and ours[0] < 0 and ours[1] < 0  # pi goes to -pi's end, -pi stays
    # ... and through a step: link 1 near +-pi turning outwards wraps to the other side
    fields = dict(
        joint_angle1=np.array([3.1, -3.1, 3.1, -3.1], np.float32),
        joint_angle2=np.zeros(4, np.float32),
        velocity_1=np.array([1.0, -1.0, -1.0, 1.0], np.float32),
        velocity_2=np.zeros(4, np.float32),
        time=np.zeros(4, np.int32),
    )
    action = np.ones(4, np.int32)
    _, state, *_ = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    a1 = state.joint_angle1.numpy()
    assert -pi32 <= a1[0] < -2.5 and 2.5 < a1[1] < pi32, a1  # across pi: wrapped
    assert 2.5 < a1[2] < pi32 and -pi32 <= a1[3] < -2.5, a1  # back from it: not
    assert (gap("joint_angle1", a1, run(fields, action)[1].joint_angle1) <= ATOL).all()

    # The termination line -cos(a1) - cos(a1 + a2) = 1: with a2 = 0 at a1 = 2 pi / 3, crossed at 1e-3 either side
    a1 = np.float32(2 * np.pi / 3) + np.array([-1e-3, 1e-3, -1e-3, 1e-3, -1e-2, 1e-2, 1.0, -1.0], np.float32)
    a1 = a1 * np.array([1, 1, -1, -1, 1, 1, 1, 1], np.float32)
    fields = dict(joint_angle1=a1, joint_angle2=zeros, velocity_1=zeros, velocity_2=zeros, time=np.zeros(8, np.int32))
    expected = line(fields) > 1
    assert np.array_equal(expected, [False, True, False, True, False, True, True, False])
    ours = env.is_terminated(torch_state(env, fields)).numpy()
    theirs = np.asarray(jax.vmap(gymnax_acrobot.is_terminal, in_axes=(0, None))(GYMNAX_STATE[env_id](**fields), params))
    assert np.array_equal(ours, expected) and np.array_equal(theirs, expected)

    # ... and steps that end within 1e-2 of it, on both sides, among random ones at speeds where rounding moves the
    # line by under 1e-5
    rng = np.random.default_rng(1)
    fields = random_states(env_id, N, rng)
    fields["velocity_1"], fields["velocity_2"] = rng.uniform(-5, 5, (2, N)).astype(np.float32)
    action = rng.integers(0, 3, N).astype(np.int32)
    _, g_state, g_reward, g_terminated, _ = run(fields, action)
    reached = {k: getattr(g_state, k) for k in ("joint_angle1", "joint_angle2")}
    near = np.abs(line(reached) - 1) < 1e-2
    env = torch_ports.make(env_id, N, "cpu")
    _, _, reward, terminated, _ = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    above = line(reached)[near] > 1
    assert above.sum() >= 10 and (~above).sum() >= 10, near.sum()
    assert np.array_equal(terminated.numpy()[near], above) and np.array_equal(g_terminated[near], above)
    assert np.array_equal(reward.numpy()[near], np.where(above, 0.0, -1.0)) and np.array_equal(
        g_reward[near], reward.numpy()[near]
    )


def test_pendulum_edges():
    """The angle normalized at odd multiples of pi (either end: the same cost), the speed clipped at +-8, the torque at
    +-2, the time limit's last steps (truncated, never terminated) and the reward of the state stepped from; against
    gymnax's step_env and its own Environment.step (its auto-reset and final observation)."""
    env_id = "Pendulum-v1"
    run = gymnax_env(env_id)[2]
    pi32 = np.float32(np.pi)

    # angle_normalize against gymnax's: bit for bit (the same float32 add, exact remainder and subtract), at and around
    # odd multiples of pi up to 101 pi, where the result lies at either end of [-pi, pi]: within rounding of pi
    odd = np.float32(np.pi * np.arange(-101, 102, 2))
    x = np.concatenate([odd, np.nextafter(odd, np.float32(np.inf)), np.nextafter(odd, np.float32(-np.inf))])
    x = np.concatenate([x, np.float32([0, 3.0, -3.0, 3.2, -3.2, 2 * np.pi, -2 * np.pi, 7.5, -7.5, 1000, -1000])])
    ours = torch_ports.angle_normalize(torch.as_tensor(x)).numpy()
    theirs = np.asarray(jax.jit(pendulum.angle_normalize)(jnp.asarray(x)))
    assert np.array_equal(ours, theirs), np.stack([x, ours, theirs])

    def angle_error(x):  # float32's in the normalized angle: the sum x + pi rounded, and 2 pi's rounding once a turn
        return np.spacing(np.abs(x) + pi32) + 3e-8 * np.abs(x) + 1e-6

    assert (gap("joint_angle", ours, x) <= angle_error(x)).all() and (np.abs(ours) <= pi32).all()
    ends = ours[: len(odd)]  # the odd multiples themselves: both ends reached
    assert (pi32 - np.abs(ends) <= angle_error(odd)).all() and (ends < 0).sum() > 10 and (ends > 0).sum() > 10

    # Steps from the edges, at times 0, 198 and 199 (the 200th step), against gymnax's step_env:
    # - at rest at the odd multiples of pi (torque 0): the cost pi^2 whichever end the angle lands at;
    # - upright (no gravity) at speeds at, next to and beyond +-8, and speeding up past it under gravity and full
    #   torque: clipped to 8 exactly, the angle moved by 8 * 0.05; the reward of the speed stepped from, 20 -> -40;
    # - torques at, next to and beyond +-2 (uniform speeds and angles): clipped.
    at_rest = len(odd)
    speeds = np.float32([8, -8, 20, -20, 7.5, -7.5] + [np.nextafter(np.float32(8), 9), np.nextafter(np.float32(8), 0)])
    speeds = np.concatenate([speeds, -speeds[-2:]])
    speed_angles = np.float32([0, 0, 0, 0, np.pi / 2, -np.pi / 2, 0, 0, 0, 0])
    speed_torques = np.float32([0, 0, 0, 0, MAX_TORQUE, -MAX_TORQUE, 0, 0, 0, 0])
    torques = np.float32([2, -2, 2.5, -2.5, 50, -50, 1e6, -1e6])
    torques = np.concatenate([torques, np.nextafter(np.float32([2, -2]), np.float32([9, -9]))])
    torques = np.concatenate([torques, np.nextafter(np.float32([2, -2]), np.float32(0))])
    rng = np.random.default_rng(2)
    one = dict(
        theta=np.concatenate([odd, speed_angles, rng.uniform(-np.pi, np.pi, len(torques))]).astype(np.float32),
        theta_dot=np.concatenate([np.zeros(at_rest), speeds, rng.uniform(-4, 4, len(torques))]).astype(np.float32),
        last_u=np.zeros(at_rest + len(speeds) + len(torques), np.float32),
    )
    u = np.concatenate([np.zeros(at_rest, np.float32), speed_torques, torques])
    times = [0, MAX_STEPS[env_id] - 2, MAX_STEPS[env_id] - 1]
    n = len(u)
    fields = {k: np.tile(v, len(times)) for k, v in one.items()}
    fields["time"] = np.repeat(np.array(times, np.int32), n)
    action = np.tile(u, len(times))[:, None]
    env = torch_ports.make(env_id, len(action), "cpu")
    obs, state, reward, terminated, truncated = env.step_env(torch_state(env, fields), torch.as_tensor(action))
    g_obs, g_state, g_reward, g_terminated, g_truncated = run(fields, action)
    ours, theirs = outputs(obs, state, reward), outputs(g_obs, g_state, g_reward)
    for name in ours:
        assert (gap(name, ours[name], theirs[name]) <= ATOL + RTOL * np.abs(theirs[name])).all(), name
    reward, theta, theta_dot = reward.numpy(), state.theta.numpy(), state.theta_dot.numpy()
    cases = np.tile(np.repeat(["rest", "speed", "torque"], [at_rest, len(speeds), len(torques)]), len(times))

    rest = cases == "rest"  # the cost pi^2 to float32 rounding of the angle
    assert (np.abs(reward[rest] + np.pi**2) <= 2 * np.pi * angle_error(fields["theta"][rest])).all()
    assert np.array_equal(reward[rest], g_reward[rest])

    speed = cases == "speed"
    expected = np.tile(np.float32([8, -8, 8, -8, 8, -8, 8, speeds[7], -8, -speeds[7]]), len(times))
    assert np.array_equal(theta_dot[speed], expected) and np.array_equal(g_state.theta_dot[speed], expected)
    assert np.array_equal(theta[speed], fields["theta"][speed] + expected * np.float32(0.05))
    assert np.array_equal(reward[speed][2:4], [-40.0, -40.0])  # 0.1 * 20^2: the speed stepped from, not 8's 6.4

    torque = cases == "torque"
    clipped = np.clip(action[:, 0], -MAX_TORQUE, MAX_TORQUE)
    assert np.array_equal(state.last_u.numpy(), clipped) and np.array_equal(g_state.last_u, clipped)
    assert np.array_equal(clipped[torque][: len(torques)], np.float32([2, -2] * 5 + list(torques[-2:])))
    # beyond the bounds the step is the bounds' step, bit for bit
    beyond, at_bounds = (env.step_env(torch_state(env, fields), torch.as_tensor(a)) for a in (action, clipped[:, None]))
    assert all(torch.equal(a, b) for a, b in zip(tree_leaves(beyond), tree_leaves(at_bounds)))

    # the reward: of the state stepped from and the clipped torque (not of the state reached)
    expected = pendulum_reward(fields["theta"], fields["theta_dot"], action)
    assert (np.abs(reward - expected) <= ATOL + RTOL * np.abs(expected) + 2 * np.pi * angle_error(fields["theta"])).all()
    from_reached = pendulum_reward(theta, theta_dot, action)  # away from rest at the bottom, far from it
    assert (np.abs(from_reached - expected)[~rest] > 1e-2).all()

    # The time limit: the step from time 199 is truncated, the one from 198 not; never terminated
    last = fields["time"] == MAX_STEPS[env_id] - 1
    assert np.array_equal(truncated.numpy(), last) and np.array_equal(g_truncated, last)
    assert not terminated.numpy().any() and not g_terminated.any()
    # ... and through the auto-resetting steps, torch_ports' and gymnax's: the 200th step resets, final_obs is the
    # observation reached
    t_obs, t_state, _, t_terminated, t_truncated, t_final = env.step(torch_state(env, fields), torch.as_tensor(action))
    g_obs, g_state, _, g_terminated, g_truncated, g_info = gymnax_step(env_id, fields, action)
    assert np.array_equal(t_truncated.numpy(), last) and np.array_equal(g_truncated, last)
    assert not t_terminated.numpy().any() and not g_terminated.any()
    assert torch.equal(t_final, obs) and (np.abs(t_final.numpy() - g_info["final_observation"]) <= 1e-6).all()
    assert reset_like(env_id, t_state)[last].all() and (g_state.time[last] == 0).all()
    assert np.array_equal(t_state.time.numpy()[~last], fields["time"][~last] + 1)
    assert torch.equal(t_obs[~torch.as_tensor(last)], obs[~torch.as_tensor(last)])


def policy(env_id, obs, explore):
    """Random actions where `explore` (from torch's default generator; Pendulum's torques uniform on [-3, 3), clipped
    by the step), elsewhere a policy that plays well: CartPole's balances the pole past 500 steps, Acrobot's pumps
    energy (torque against the first link's swing) and gets the tip up in about 100, Pendulum's pumps energy (full
    torque along the swing) up to the upright's and brakes beyond it. Episodes then end both ways, terminated and
    truncated (Pendulum's all truncated). Actions: int32 (n,), or float32 torques (n, 1)."""
    n = len(obs)
    if env_id == "CartPole-v1":
        drawn = torch.randint(0, 2, (n,), dtype=torch.int32)
        chosen = (obs @ torch.tensor([0.1, 0.3, 3.0, 1.0]) > 0).to(torch.int32)
    elif env_id == "Acrobot-v1":
        drawn = torch.randint(0, 3, (n,), dtype=torch.int32)
        chosen = torch.where(obs[:, 4] > 0, 0, 2).to(torch.int32)
    else:
        drawn = torch.rand(n) * 3 * MAX_TORQUE - 1.5 * MAX_TORQUE
        # speed' = 15 sin(theta) + 3 torque: the energy 0.5 speed^2 + 15 cos(theta) changes by 3 torque * speed
        energy = 0.5 * obs[:, 2] ** 2 + 15 * obs[:, 0]
        chosen = MAX_TORQUE * torch.sign(obs[:, 2]) * torch.sign(15 - energy)
    action = torch.where(explore, drawn, chosen)
    return action[:, None] if env_id == "Pendulum-v1" else action


@pytest.mark.parametrize("env_id", torch_ports.IDS)
def test_auto_reset_over_a_rollout(env_id):
    """64 environments x 600 steps of torch_ports' step, past the time limit: at every step, final_obs is step_env's
    observation from the state stepped from, the state is step_env's where not done and a fresh reset where done;
    episodes end at the time limit (500 steps, Pendulum's 200) at the latest, truncated there."""
    torch.manual_seed(0)
    num_envs, steps = 64, 600
    env = torch_ports.make(env_id, num_envs, "cpu")
    obs, state = env.reset()
    explore = torch.arange(num_envs) % 2 == 0
    stepped, went_on = [], []  # per step: step_env's outputs, and step's
    for _ in range(steps):  # each step's own checks: those that compare two computations of one shape
        action = policy(env_id, obs, explore)
        obs_st, state_st, reward_st, terminated_st, truncated_st = env.step_env(state, action)
        obs, state, reward, terminated, truncated, final_obs = env.step(state, action)
        assert torch.equal(final_obs, obs_st) and torch.equal(reward, reward_st)
        assert torch.equal(terminated, terminated_st) and torch.equal(truncated, truncated_st)
        stepped.append((obs_st, *state_st))
        went_on.append((obs, *state, terminated, truncated))
    # the rest on the whole rollout at once, (steps, num_envs, ...)
    obs_st, *state_st = (torch.stack(x) for x in zip(*stepped))
    obs, *state, terminated, truncated = (torch.stack(x) for x in zip(*went_on))
    done = terminated | truncated
    limit = MAX_STEPS[env_id]
    assert torch.equal(truncated, state_st[-1] >= limit)
    for new, old in zip(state, state_st):  # where not done, the state step_env reached; where done, a reset
        assert torch.equal(new[~done], old[~done])
    assert torch.equal(obs[~done], obs_st[~done])
    assert reset_like(env_id, state)[done].all()
    if env_id == "CartPole-v1":
        assert torch.equal(obs, torch.stack(state[:4], -1))
    elif env_id == "Acrobot-v1":
        assert torch.equal(obs[..., 4:], torch.stack(state[2:4], -1))
        angles = torch.stack([state[0].cos(), state[0].sin(), state[1].cos(), state[1].sin()], -1)
        torch.testing.assert_close(obs[..., :4], angles, rtol=0, atol=1e-6)
    else:
        assert torch.equal(obs[..., 2], state[1])
        torch.testing.assert_close(obs[..., :2], torch.stack([state[0].cos(), state[0].sin()], -1), rtol=0, atol=1e-6)
    assert (obs[done] != obs_st[done]).any(-1).all()
    # episodes: the time counts the steps of each since its reset, up to the limit where it is truncated
    length = np.zeros(num_envs, np.int64)
    lengths = []
    for t in range(steps):
        length += 1
        assert np.array_equal(state_st[-1][t].numpy(), length)
        lengths += length[done[t].numpy()].tolist()
        length[done[t].numpy()] = 0
    lengths = np.array(lengths)
    truncations, terminations = int(truncated.sum()), int(terminated.sum())
    if env_id == "Pendulum-v1":  # never terminated: every episode runs to the limit
        assert terminations == 0 and (lengths == limit).all() and truncations == num_envs * (steps // limit), truncations
    else:
        assert lengths.max() == limit and truncations >= 8 and terminations >= 8, (truncations, terminations)
    assert (lengths == limit).sum() == truncations  # every episode that ran to the limit was truncated there


@pytest.mark.parametrize("env_id", torch_ports.IDS)
def test_reset_distribution_matches_gymnax(env_id):
    """Moments and ranges over 50,000 draws of each, against uniform on [-r, r) (Pendulum's: the angle on [-pi, pi),
    the speed on [-1, 1), no torque yet) and against each other."""
    n = 50_000
    env = torch_ports.make(env_id, n, "cpu")
    obs, state = env.reset(torch.Generator().manual_seed(0))
    gymnax_reset, params, _ = gymnax_env(env_id)
    g_obs, g_state = jax.vmap(gymnax_reset.reset, in_axes=(0, None))(jax.random.split(jax.random.key(0), n), params)
    assert len(state._fields) - 1 == len(RESET_RANGE[env_id])
    for name, r in zip(state._fields[:-1], RESET_RANGE[env_id]):
        ours, theirs = getattr(state, name).numpy().astype(np.float64), np.asarray(getattr(g_state, name), np.float64)
        assert getattr(state, name).dtype == torch.float32 and getattr(state, name).shape == (n,)
        if r == 0:  # Pendulum's last torque: none yet
            assert not ours.any() and not theirs.any(), name
            continue
        r = float(np.float32(r))  # the bound as drawn, in float32 (where pi rounds up)
        sd_of_mean = (2 * r) / math.sqrt(12 * n)
        for x in (ours, theirs):
            assert -r <= x.min() < -r + 1e-3 * r and r - 1e-3 * r < x.max() <= r, name
            assert abs(x.mean()) < 5 * sd_of_mean, name
            assert x.var() == pytest.approx((2 * r) ** 2 / 12, rel=0.02), name
        assert abs(ours.mean() - theirs.mean()) < 7 * sd_of_mean and ours.var() == pytest.approx(theirs.var(), rel=0.03)
    assert state.time.dtype == torch.int32 and (state.time == 0).all() and (np.asarray(g_state.time) == 0).all()
    assert obs.shape == np.asarray(g_obs).shape and torch.equal(obs, env.get_obs(state))
    # the generator decides the draws
    again, _ = env.reset(torch.Generator().manual_seed(0))
    other, _ = env.reset(torch.Generator().manual_seed(1))
    assert torch.equal(obs, again) and not torch.equal(obs, other)


@pytest.mark.parametrize("env_id", torch_ports.IDS)
def test_interface_and_params_as_gymnax(env_id):
    env = torch_ports.make(env_id, 3, "cpu")
    gymnax_same, params, _ = gymnax_env(env_id)
    assert env.num_actions == gymnax_same.num_actions and env.num_envs == 3 and env.device == torch.device("cpu")
    assert env.observation_shape == gymnax_same.observation_space(params).shape
    assert env.max_steps_in_episode == params.max_steps_in_episode == MAX_STEPS[env_id]
    space = gymnax_same.action_space(params)
    assert env.continuous == isinstance(space, spaces.Box) == (env_id == "Pendulum-v1")
    if env.continuous:  # the torque: a Box of shape (1,) on [-2, 2]
        assert space.shape == (env.num_actions,) == (1,) and space.dtype == jnp.float32
        assert (space.low, space.high) == (-env.max_torque, env.max_torque) == (-MAX_TORQUE, MAX_TORQUE)
    else:
        assert space.n == env.num_actions
    fields = list(vars(type(params)).get("__dataclass_fields__"))
    shared = [name for name in fields if hasattr(env, name)]
    # every parameter of gymnax's EnvParams but Acrobot's two below (the torques and their noise)
    assert set(fields) - set(shared) <= {"available_torque", "torque_noise_max"}, shared
    assert len(shared) >= 7, shared
    for name in shared:
        assert float(getattr(env, name)) == pytest.approx(float(getattr(params, name)), rel=1e-15), name
    if env_id == "Acrobot-v1":
        assert np.array_equal(np.asarray(params.available_torque), [-1.0, 0.0, 1.0]) and params.torque_noise_max == 0


class NoHostReads(TorchDispatchMode):
    """Fails on any op that reads a tensor's value back to the host or makes a shape from data."""

    READS = {
        "_local_scalar_dense",
        "nonzero",
        "masked_select",
        "_unique2",
        "unique_dim",
        "multinomial",
        "equal",
        "is_nonzero",
        "item",
    }

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        assert func.__name__.split(".")[0] not in self.READS, f"{func} reads back to the host"
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("env_id", torch_ports.IDS)
def test_step_reads_nothing_back_and_compiles_whole(env_id):
    env = torch_ports.make(env_id, 16, "cpu")
    obs, state = env.reset()
    action = policy(env_id, obs, torch.ones(16, dtype=torch.bool))  # random actions
    assert action.shape == ((16, 1) if env.continuous else (16,))
    with NoHostReads():
        env.step(state, action)
        env.step_env(state, action)
        env.reset()
    with pytest.raises(AssertionError, match="host"), NoHostReads():  # the trap itself works
        bool(obs.sum() > 0)
    # fullgraph=True fails on a graph break: a host read, a data-dependent shape, untraceable Python
    compiled = torch.compile(env.step, fullgraph=True, backend="eager")
    out = compiled(state, action)
    assert out[0].shape == obs.shape and out[1].time.dtype == torch.int32


def test_unknown_id_raises():
    for make in (torch_ports.make, lambda *a: gymnasium_envs.make(*a, seed=0)):
        with pytest.raises(ValueError, match="CartPole-v1, Acrobot-v1, Pendulum-v1"):
            make("MountainCar-v0", 2, "cpu")


def reset_obs(env_id, obs) -> torch.Tensor:
    """Whether each observation could be a reset's: (n, k) -> (n,)."""
    if env_id == "CartPole-v1":
        return (obs.abs() <= 0.05).all(-1)
    if env_id == "Pendulum-v1":  # any angle, a speed in [-1, 1]
        return ((obs[:, 0] ** 2 + obs[:, 1] ** 2 - 1).abs() <= 1e-6) & (obs[:, 2].abs() <= 1)
    angles_ok = (obs[:, [0, 2]] >= math.cos(0.1) - 1e-6).all(-1) & (obs[:, [1, 3]].abs() <= math.sin(0.1) + 1e-6).all(-1)
    return angles_ok & (obs[:, 4:].abs() <= 0.1 + 1e-6).all(-1)


@pytest.mark.parametrize("env_id", torch_ports.IDS)
def test_gymnasium_wrapper(env_id):
    """A short rollout of make_gymnasium: types, same-step reset with the final observation, the time limit (500
    steps, Pendulum's 200); and Gymnasium's environments step as torch_ports' do, reward included (float64 there,
    float32 here)."""
    num_envs = 8 if env_id == "CartPole-v1" else 4
    steps = {"CartPole-v1": 1100, "Acrobot-v1": 520, "Pendulum-v1": 420}[env_id]
    env = gymnasium_envs.make(env_id, num_envs, "cpu", seed=1)
    twin = torch_ports.make(env_id, num_envs, "cpu")
    assert (env.num_actions, env.observation_shape) == (twin.num_actions, twin.observation_shape)
    assert env.continuous == twin.continuous
    assert env.num_envs == num_envs and env.device == torch.device("cpu")
    obs, state = env.reset()
    assert state is None and obs.dtype == torch.float32 and obs.shape == (num_envs, *env.observation_shape)
    assert reset_obs(env_id, obs).all()
    torch.manual_seed(0)
    explore = torch.arange(num_envs) % 2 == 0
    length = np.zeros(num_envs, np.int64)
    ends = {"terminated": 0, "truncated": 0}
    for _ in range(steps):
        action = policy(env_id, obs, explore)
        obs_next, state, reward, terminated, truncated, final_obs = env.step(None, action)
        assert state is None
        assert obs_next.dtype == final_obs.dtype == reward.dtype == torch.float32
        assert terminated.dtype == truncated.dtype == torch.bool and reward.shape == terminated.shape == (num_envs,)
        assert obs_next.shape == final_obs.shape == (num_envs, *env.observation_shape)
        assert obs_next.device == final_obs.device == reward.device == env.device
        done = terminated | truncated
        assert torch.equal(obs_next[~done], final_obs[~done])
        assert reset_obs(env_id, obs_next[done]).all() and (obs_next[done] != final_obs[done]).any(-1).all()
        # Each step goes on from the observation the agent saw, a reset's after an episode ended, with torch_envs'
        # dynamics (Gymnasium's in float64, rounded to float32 observations: Acrobot's and Pendulum's angles are read
        # back from their cos and sin).
        zero = torch.zeros(num_envs, dtype=torch.int32)
        if env_id == "CartPole-v1":
            seen = torch_ports.CartPoleState(*obs.T, zero)
            assert (reward == 1).all()  # no step lost to a reset (NEXT_STEP's reward 0)
        elif env_id == "Acrobot-v1":
            seen = torch_ports.AcrobotState(obs[:, 1].atan2(obs[:, 0]), obs[:, 3].atan2(obs[:, 2]), obs[:, 4], obs[:, 5], zero)
            assert torch.equal(reward, torch.where(terminated, 0.0, -1.0))
        else:  # the last torque: the step's output only
            seen = torch_ports.PendulumState(obs[:, 1].atan2(obs[:, 0]), obs[:, 2], zero.float(), zero)
        reached, _, reward_there, terminated_there, _ = twin.step_env(seen, action)
        torch.testing.assert_close(final_obs, reached, rtol=1e-5, atol=1e-4 if env_id == "Acrobot-v1" else 1e-5)
        torch.testing.assert_close(reward, reward_there, rtol=1e-5, atol=1e-5)
        assert torch.equal(terminated, terminated_there)
        length += 1
        assert (length <= MAX_STEPS[env_id]).all()
        assert np.array_equal(truncated.numpy(), length == MAX_STEPS[env_id])  # at 500 (200) exactly
        ends["terminated"] += int(terminated.sum())
        ends["truncated"] += int(truncated.sum())
        length[done.numpy()] = 0
        obs = obs_next
    if env_id == "Pendulum-v1":  # never terminated: every episode truncated at 200 steps
        assert ends == {"terminated": 0, "truncated": num_envs * (steps // MAX_STEPS[env_id])}, ends
    else:
        assert ends["truncated"] >= 2 and ends["terminated"] >= 2, ends
    # seeded once: the same seed and actions, the same run; another seed, another
    runs = []
    ones = torch.ones(num_envs, 1) if env.continuous else torch.ones(num_envs, dtype=torch.int64)
    for seed in (1, 1, 2):
        e = gymnasium_envs.make(env_id, num_envs, "cpu", seed=seed)
        first, _ = e.reset()
        runs.append(torch.cat([first] + [e.step(None, ones)[0] for _ in range(30)]))
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])
