"""benchback/gridworld.py, the NumPy FourRooms-misc of PyTorch's own stack, against gymnax's: the map, the start and
the goal; every position, goal and action stepped; the random actions' frequencies; the time limit; and the same
environments in Gymnasium's SyncVectorEnv and AsyncVectorEnv (gymnasium_envs.py)."""

import json

import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from gymnax.environments.misc import rooms
from scipy import stats

from benchback import gridworld, gymnasium_envs
from report import figures
from studies import gridworld_stacks

ENV, PARAMS = gymnax.make("FourRooms-misc")
CELLS = np.argwhere(gridworld.OPEN)  # every position the agent may stand on (104)


def test_the_map_start_goal_and_bounds_are_gymnaxs():
    assert np.array_equal(gridworld.OPEN, np.asarray(ENV.env_map))
    assert np.array_equal(gridworld.DIRECTIONS, np.asarray(ENV.directions))
    _, state = ENV.reset(jax.random.key(0), PARAMS)
    assert (gridworld.START.tolist(), gridworld.GOAL.tolist()) == (state.pos.tolist(), state.goal.tolist())
    space, ours = ENV.observation_space(PARAMS), gridworld.FourRooms().observation_space
    assert (float(space.low), float(space.high), space.shape) == (ours.low.min(), ours.high.max(), ours.shape)
    assert gridworld.MAX_STEPS == PARAMS.max_steps_in_episode
    obs, _ = gridworld.make().reset(seed=0)
    assert np.array_equal(obs, np.asarray(ENV.get_obs(state)))


def test_every_position_goal_and_action_steps_as_gymnaxs():
    """With the random replacement off (fail_prob 0 in both), all 104 x 104 x 4 transitions: the same observation,
    reward and termination. A wrong direction, a missing wall or a goal compared by one coordinate would differ."""
    pos, goal, action = (a.reshape(-1) for a in np.meshgrid(np.arange(len(CELLS)), np.arange(len(CELLS)), np.arange(4)))
    state = rooms.EnvState(pos=jnp.asarray(CELLS[pos]), goal=jnp.asarray(CELLS[goal]), time=jnp.zeros(len(pos), jnp.int32))
    step = jax.jit(jax.vmap(ENV.step_env, in_axes=(0, 0, 0, None)))
    keys = jax.random.split(jax.random.key(0), len(pos))
    obs, _, reward, terminated, _ = jax.tree.map(
        np.asarray, step(keys, state, jnp.asarray(action), PARAMS.replace(fail_prob=0.0))
    )
    env = gridworld.FourRooms(fail_prob=0.0)
    env.reset(seed=0)
    ours = []
    for p, g, a in zip(CELLS[pos], CELLS[goal], action):
        env.pos, env.goal = p.copy(), g.copy()
        ours.append(env.step(a)[:3])
    our_obs, our_reward, our_terminated = (np.array(x) for x in zip(*ours))
    assert np.array_equal(our_obs, obs)
    assert np.array_equal(our_reward, reward) and np.array_equal(our_terminated, terminated)
    assert 0 < terminated.sum() < len(terminated) // 10  # the goal is reached from its neighbours only


def move_counts(moves: np.ndarray) -> np.ndarray:
    """How often each of the four directions was moved in, from the position changes."""
    return np.array([np.all(moves == d, axis=1).sum() for d in gridworld.DIRECTIONS])


def test_the_random_actions_are_drawn_as_gymnaxs():
    """From a cell open on all four sides, always asking for up: up 2/3 of the time, each other way 1/9 (fail_prob 1/3,
    replaced by a uniform draw 4/9 of the time), in both; a chi-square test at 1e-4 of 20,000 steps each. A
    replacement probability of fail_prob alone (up 3/4) would fail it by far."""
    n, cell = 20_000, np.array([2, 2])
    assert gridworld.OPEN[tuple((cell + gridworld.DIRECTIONS).T)].all()
    expected = n * np.array([6, 1, 1, 1]) / 9
    state = rooms.EnvState(pos=jnp.tile(cell, (n, 1)), goal=jnp.tile(jnp.array([8, 9]), (n, 1)), time=jnp.zeros(n, jnp.int32))
    step = jax.jit(jax.vmap(ENV.step_env, in_axes=(0, 0, None, None)))
    _, reached, *_ = step(jax.random.split(jax.random.key(1), n), state, 0, PARAMS)
    env = gridworld.FourRooms()
    env.reset(seed=1)
    ours = []
    for _ in range(n):
        env.pos = cell.copy()
        ours.append(env.step(0)[0][:2])
    for moves in (np.asarray(reached.pos) - cell, np.array(ours) - cell):
        assert stats.chisquare(move_counts(moves), expected).pvalue > 1e-4


def test_the_time_limit_truncates_the_500th_step():
    """With the goal out of reach (a wall cell), neither terminates and only the 500th step truncates, as gymnax's
    is_truncated (time >= 500) on the state reached."""
    env = gridworld.make()
    env.reset(seed=0)
    env.unwrapped.goal = np.array([0, 0])
    truncated = [env.step(env.action_space.sample())[3] for _ in range(gridworld.MAX_STEPS)]
    assert truncated == [False] * (gridworld.MAX_STEPS - 1) + [True]
    state = rooms.EnvState(pos=jnp.array([4, 1]), goal=jnp.array([0, 0]), time=gridworld.MAX_STEPS - 1)
    _, state, *_ = ENV.step_env(jax.random.key(0), state, 0, PARAMS)
    assert bool(ENV.is_truncated(state, PARAMS)) and not bool(ENV.is_terminated(state, PARAMS))


def test_a_process_per_env_steps_the_same_envs_as_one_process():
    """gymnasium-async's AsyncVectorEnv and gymnasium's SyncVectorEnv from the same seed and actions: the same
    observations, rewards, flags and final observations, through episodes that end (the random draws are the envs'
    own, seeded alike)."""
    rng = np.random.default_rng(0)
    actions = rng.integers(4, size=(600, 3))
    runs = []
    for asynchronous in (False, True):
        envs = gymnasium_envs.make("FourRooms-misc", 3, "cpu", seed=5, asynchronous=asynchronous)
        steps = [envs.reset()[0].numpy()]
        for a in actions:
            steps += [x.numpy() for x in envs.step(None, torch.as_tensor(a)) if x is not None]
        envs.envs.close()
        runs.append(steps)
    sync, asynchronous = runs
    assert all(np.array_equal(a, b) for a, b in zip(sync, asynchronous))
    rewards = np.array(sync[2::5])  # (obs, reward, terminated, truncated, final_obs) a step, after the reset's obs
    assert rewards.sum() >= 1  # some episode reached the goal, and was reset on the same step


# ---------------------------------------------------------------- studies/gridworld_stacks.py: the rollout per stack
@pytest.mark.parametrize(
    "argv, said",
    [
        (["--blocks", "0"], "--blocks 0: at least 1"),
        (["--counts", "4,0"], "--counts 4,0: positive integers, comma-separated"),
        (["--counts", "many"], "--counts many: positive integers, comma-separated"),
        (["--quick", "--steps", "5"], "--steps 5: --quick sets its own"),
    ],
)
def test_the_stacks_study_refuses_bad_input_in_one_line_and_writes_nothing(argv, said, tmp_path, capsys):
    assert gridworld_stacks.main([*argv, "--out", str(tmp_path / "r.json")]) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert err.startswith("error: ") and said in err
    assert list(tmp_path.iterdir()) == []


def test_the_stacks_summary_pairs_each_rollout_with_jax_scans_of_its_block():
    """A stack twice as slow as jax-scan in every block is 2.0 over it, whatever the blocks' drift; the median and the
    steps per second are its own rollouts'."""
    rows = []
    for block, drift in enumerate((1.0, 3.0, 0.5, 1.5), start=1):
        for stack, seconds in (("jax-scan", 0.1), ("jax-vmapped", 0.2), ("gymnasium-sync", 0.4), ("gymnasium-async", 0.8)):
            rows.append(dict(kind="rollout", stack=stack, num_envs=8, block=block, seconds=seconds * drift, reward=0.0))
    result = gridworld_stacks.summary(rows + [dict(kind="setup", stack="jax-scan", num_envs=8, seconds=9.0)], steps=100)
    (vmapped,) = result["jax-vmapped"]
    assert vmapped["over_jax_scan"] == pytest.approx(2.0) and vmapped["over_jax_scan_ci"] == pytest.approx([2.0, 2.0])
    assert vmapped["rollout_s"] == pytest.approx(0.2 * 1.25) and vmapped["blocks"] == 4
    assert result["gymnasium-async"][0]["steps_per_s"] == pytest.approx(8 * 100 / (0.8 * 1.25))


@pytest.mark.slow
def test_the_stacks_study_times_every_stack_at_every_count(tmp_path):
    """--quick: every stack at 1 and 4 envs, in 2 rotated blocks, the same work (the rewards of a random walk: 0 or a
    few), a figure a reader can read."""
    out = tmp_path / "rollout.json"
    assert gridworld_stacks.main(["--quick", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    timed = [r for r in result["rows"] if r["kind"] == "rollout"]
    assert sorted({(r["stack"], r["num_envs"]) for r in timed}) == sorted(
        (s, n) for s in gridworld_stacks.STACKS for n in (1, 4)
    )
    assert [r["stack"] for r in timed[: len(gridworld_stacks.STACKS)]] != [
        r["stack"] for r in timed[len(gridworld_stacks.STACKS) : 2 * len(gridworld_stacks.STACKS)]
    ]  # the order rotates
    assert all(r["seconds"] > 0 and r["reward"] >= 0 for r in timed)
    assert (tmp_path / "rollout.png").exists() and figures.LAYOUT["rollout.png"] == []
