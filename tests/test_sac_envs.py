"""torch_envs.SACEnvs, the SAC torch scripts' environments on --env-backend torch: actions clipped to the bounds as
gymnax clips them, transitions as the gymnax adapter hands them over, and the episodes that ended counted on the device
until a tally reads them."""

import torch

import torch_envs


def test_the_torch_pendulum_clips_steps_and_counts_whole_episodes():
    envs = torch_envs.make_for_sac("torch", "Pendulum-v1", 3, "cpu", seed=1)
    assert list(envs.space.low) == [-2.0] and list(envs.space.high) == [2.0]
    state, obs = envs.reset(1)
    big = torch.full((3, 1), 7.0)
    (_, ended), _, reward, terminated, final_obs = envs.step(state, big)
    (_, _), _, reward_at_bound, _, _ = envs.step(state, torch.full((3, 1), 2.0))
    assert torch.equal(reward, reward_at_bound)  # 7 is stepped as 2, the bound
    assert terminated.dtype == torch.float32 and not terminated.any() and final_obs.shape == (3, 3)
    assert ended["episodes"].item() == 0
    for _ in range(200):  # Pendulum-v1's episodes last 200 steps
        state, obs, reward, terminated, final_obs = envs.step(state, torch.zeros((3, 1)))
    state, counted = envs.tally(state)
    assert counted["episodes"] == 3 and counted["length_sum"] == 600 and counted["return_sum"] < 0
    assert envs.tally(state)[1]["episodes"] == 0  # a tally starts the count afresh


def test_discrete_actions_are_refused():
    try:
        torch_envs.make_for_sac("torch", "CartPole-v1", 2, "cpu", seed=1)
    except ValueError as e:
        assert "continuous" in str(e)
    else:
        raise AssertionError("CartPole-v1 was accepted for SAC")
