"""torch_envs.PortEnvs, the SAC torch scripts' environments on --env-backend torch: actions clipped to the bounds as
gymnax clips them, transitions as the gymnax adapter hands them over, and the episodes that ended counted on the device
until a tally reads them."""

import numpy as np
import torch

from benchback import torch_envs


def test_the_torch_pendulum_clips_steps_and_counts_whole_episodes():
    envs = torch_envs.make("torch", "Pendulum-v1", 3, "cpu", None, seed=1, tally=True)
    bounds = [np.broadcast_to(bound, envs.space.shape).tolist() for bound in (envs.space.low, envs.space.high)]
    assert bounds == [[-2.0], [2.0]]  # gymnax's space: the same dynamics
    state, obs = envs.reset(1)
    big = torch.full((3, 1), 7.0)
    after, _, out = envs.step(state, big)
    _, _, at_bound = envs.step(state, torch.full((3, 1), 2.0))
    assert torch.equal(out.reward, at_bound.reward)  # 7 is stepped as 2, the bound
    reward, terminated, final_obs = envs.to_torch(out.reward, out.terminated, out.final_obs)
    assert terminated.dtype == torch.bool and not terminated.any() and final_obs.shape == (3, 3)
    assert after.ended["episodes"].item() == 0
    for _ in range(200):  # Pendulum-v1's episodes last 200 steps
        state, obs, out = envs.step(state, torch.zeros((3, 1)))
    state, counted = envs.tally(state)
    assert counted["episodes"] == 3 and counted["length_sum"] == 600 and counted["return_sum"] < 0
    assert envs.tally(state)[1]["episodes"] == 0  # a tally starts the count afresh


def test_untallied_envs_count_nothing_across_steps():
    """PPO's: each step names the episodes it ended (EnvStep.finished), and the state carries no running count."""
    envs = torch_envs.make("torch", "Pendulum-v1", 2, "cpu", None, seed=1)
    state, obs = envs.reset(1)
    for _ in range(200):
        state, obs, out = envs.step(state, torch.zeros((2, 1)))
    assert state.ended == {} and out.finished.lengths.tolist() == [200, 200]
