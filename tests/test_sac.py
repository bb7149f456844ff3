"""The SAC scripts: sac_jax_linen.py and sac_torch.py run from their command line and write a
record of equal work, compile nothing after iteration 0, refuse bad input in one line; their replay buffers wrap around;
their tanh-squashed Gaussian has the density of the squashed variable; and from the same weights and batch their
first critic and actor updates agree to float rounding. A learning check on Pendulum-v1 is marked slow."""

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from benchback.cli import main
from benchback.compiles import count_compiles
from benchback.record import Log
from conftest import ROOT, in_background
from conftest import load as load_script

SAC = {"jax_linen": "sac_jax_linen.py", "torch": "sac_torch.py"}
# A few hundred steps: 100 random, then 5 iterations of 2 envs x 40 steps with 2 gradient steps each (Pendulum's first
# episodes end at the envs' 200th step, in iteration 4), in a buffer smaller than the run (it wraps).
TINY = ["--no-cuda", "--no-tensorboard", "--quiet", "--total-timesteps", "500", "--learning-starts", "100", "--num-envs", "2"]
TINY += ["--steps-per-iteration", "40", "--updates-per-step", "2", "--buffer-size", "128", "--batch-size", "32"]
TINY += ["--hidden", "32,32"]


def load(name: str):
    """A SAC script imported as a module, once per test process, as conftest loads the PPO scripts: the OpenMP
    defaults sac_torch.py sets when imported are kept out of the environment of the runs the tests start."""
    return load_script(f"sac_{name}", SAC[name])


def run(name: str, *flags: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / SAC[name]), *flags]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def tiny_run(directory, name: str):
    """The script's process on TINY, and its record (None without one): run beside the other tests."""
    proc = run(name, *TINY, "--json-out", "run.json", cwd=directory)
    return proc, json.loads((directory / "run.json").read_text()) if (directory / "run.json").exists() else None


@pytest.mark.parametrize("name", SAC)
@in_background(tiny_run)
def test_a_run_from_the_command_line_writes_a_record_of_its_work(name, background):
    proc, record = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (record["variant"], record["algorithm"], record["status"]) == (name, "sac", "ok")
    assert record["random_steps"] == 100 and record["env_steps"] == 500  # 100 random, 5 iterations of 2 x 40
    assert len(record["iteration_durations"]) == 5 and record["grad_steps"] == 5 * 40 * 2
    # actor: 3*32+32 + 32*32+32 + 2*(32+1); each Q network: 4*32+32 + 32*32+32 + 32+1; log alpha: 1
    assert record["param_count"] == (128 + 1056 + 66) + 2 * (160 + 1056 + 33) + 1
    assert record["compiles_after_first_iteration"] == 0
    # Pendulum's episodes end at each env's 200th step, in iteration 3: none in the last, the final return's window
    assert record["episodes"] == [0, 0, 0, 2, 0] and record["final_window"] == 1 and record["final_return"] is None
    assert record["episodic_return"][3] is not None and record["random_duration"] > 0


BAD = [
    ["--batch-size", "0"],
    ["--env-id", "NoSuchEnv-v0"],
    ["--tau", "2"],
    ["--env-id", "CartPole-v1"],
    ["--updates-per-step", "-1"],
    ["--num-envs", "4", "--buffer-size", "2"],  # 4 transitions a step into 2 rows
    ["--full-buffer", "--learning-starts", "0"],  # nothing to fill it with
]


@pytest.mark.parametrize("name", SAC)
@pytest.mark.parametrize("bad", BAD, ids=lambda flags: " ".join(flags))
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(name, bad, tmp_path, capsys, monkeypatch):
    module = load(name)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run.json"
    assert main(module.Args, module.train, [*TINY, "--json-out", str(out), *bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert list(tmp_path.iterdir()) == []  # no record, no TensorBoard run


def test_the_buffers_wrap_around_to_the_oldest_rows():
    """Capacity 5, 2 envs, 4 steps of values 2*step + env: rows 0-1, 2-3, 4-0, 1-2 are written."""
    import jax.numpy as jnp
    import torch

    jx, pt = load("jax_linen"), load("torch")
    buffer = jx.make_buffer(5, 1, 1)
    torch_buffer = pt.ReplayBuffer(5, 1, 1, 2, torch.device("cpu"))
    for step in range(4):
        values = np.array([2 * step, 2 * step + 1], np.float32)
        buffer = jx.store(buffer, jx.Transitions(*(jnp.asarray(values).reshape(2, *s) for s in ((1,), (1,), (), (1,), ()))))
        torch_buffer.store(pt.Transitions(*(torch.tensor(values).reshape(2, *s) for s in ((1,), (1,), (), (1,), ()))))
    for data in (buffer.data, torch_buffer.data):
        for field in data:
            np.testing.assert_array_equal(np.asarray(field).reshape(-1), [5, 6, 7, 3, 4])
    assert (int(buffer.pos), int(buffer.size)) == (torch_buffer.pos, torch_buffer.size) == (3, 5)
    import jax

    rows = jx.sample(buffer, jax.random.key(0), 1000).reward
    assert set(np.asarray(rows).tolist()) == {3, 4, 5, 6, 7} and set(torch_buffer.sample(1000).reward.tolist()) == {
        3,
        4,
        5,
        6,
        7,
    }


def test_a_partly_filled_buffer_samples_only_its_full_rows():
    import jax
    import jax.numpy as jnp

    jx = load("jax_linen")
    buffer = jx.store(jx.make_buffer(100, 1, 1), jx.Transitions(*(jnp.ones((3, *s)) for s in ((1,), (1,), (), (1,), ()))))
    assert np.all(np.asarray(jx.sample(buffer, jax.random.key(1), 500).reward) == 1)


@pytest.mark.parametrize("name", SAC)
def test_the_tanh_gaussian_log_probability_is_the_density_of_the_squashed_action(name):
    """log p(a), a = scale * tanh(x) + bias with x ~ N(mean, std), against the derivative of its CDF in float64:
    P(A <= a) = Phi((atanh((a - bias) / scale) - mean) / std), differentiated numerically, per dimension."""
    rng = np.random.default_rng(0)
    mean, log_std = rng.uniform(-1, 1, size=(64, 2)).astype(np.float32), rng.uniform(-2, 0, size=(64, 2)).astype(np.float32)
    noise = rng.normal(size=(64, 2)).clip(-2, 2).astype(np.float32)  # |x| <= 3: float32's tanh far from saturating
    scale, bias = np.float32([2.0, 0.5]), np.float32([0.0, 0.25])
    module = load(name)
    if name == "torch":
        import torch

        action, log_prob = module.tanh_gaussian(*map(torch.tensor, (mean, log_std, noise, scale, bias)))
    else:
        action, log_prob = module.tanh_gaussian(mean, log_std, noise, scale, bias)
    action, log_prob = np.asarray(action, np.float64), np.asarray(log_prob, np.float64)
    x = mean + np.exp(log_std.astype(np.float64)) * noise
    a = scale * np.tanh(x) + bias
    np.testing.assert_allclose(action, a, rtol=1e-5, atol=1e-6)
    cdf = lambda a: stats.norm.cdf((np.arctanh((a - bias) / scale) - mean) / np.exp(log_std.astype(np.float64)))
    h = 1e-6 * scale * (1 - np.tanh(x) ** 2)  # a step small beside the distance to the bounds
    density = (cdf(a + h) - cdf(a - h)) / (2 * h)
    np.testing.assert_allclose(log_prob, np.log(density).sum(-1), rtol=1e-4, atol=1e-3)


def linen_to_torch(params: dict, module) -> None:
    """Copy a Linen network's Dense layers (Dense_0, Dense_1, ... in order) into a torch module's nn.Linear layers."""
    import torch

    layers = [m for m in module.modules() if isinstance(m, torch.nn.Linear)]
    dense = [params[f"Dense_{i}"] for i in range(len(params))]
    assert len(layers) == len(dense)
    with torch.no_grad():
        for linear, p in zip(layers, dense):
            linear.weight.copy_(torch.tensor(np.asarray(p["kernel"]).T))
            linear.bias.copy_(torch.tensor(np.asarray(p["bias"])))


def test_from_the_same_start_one_critic_and_one_actor_update_agree():
    """The torch networks take Linen's initial weights; one critic update and one actor (and alpha) update on the same
    batch and noise leave the same parameters, to float rounding."""
    import jax
    import jax.numpy as jnp
    import optax
    import torch
    from flax.training.train_state import TrainState

    jx, pt = load("jax_linen"), load("torch")
    jax_args, torch_args = jx.Args(hidden="64,64"), pt.Args(hidden="64,64")
    obs_dim, action_dim, hidden, n = 3, 2, (64, 64), 256
    low, high = np.float32([-2.0, -1.0]), np.float32([2.0, 0.5])
    actor, critic = jx.Actor(hidden, tuple((high - low) / 2), tuple((high + low) / 2)), jx.Critic(hidden)
    rng = np.random.default_rng(3)
    obs, next_obs = rng.normal(size=(2, n, obs_dim)).astype(np.float32)
    action = rng.uniform(low, high, size=(n, action_dim)).astype(np.float32)
    reward, terminated = rng.normal(size=n).astype(np.float32), (rng.uniform(size=n) < 0.1).astype(np.float32)
    noise, actor_noise, alpha_noise = rng.normal(size=(3, n, action_dim)).astype(np.float32)
    actor_params = actor.init(jax.random.key(0), obs)
    critic_params = critic.init(jax.random.key(1), obs, action)
    learner = jx.Learner(
        TrainState.create(apply_fn=actor.apply, params=actor_params, tx=optax.adam(jax_args.policy_lr)),
        TrainState.create(apply_fn=critic.apply, params=critic_params, tx=optax.adam(jax_args.q_lr)),
        critic_params,
        TrainState.create(apply_fn=None, params={"log_alpha": jnp.float32(0)}, tx=optax.adam(jax_args.q_lr)),
    )
    agent = pt.Agent(obs_dim, action_dim, hidden, low, high)
    linen_to_torch(actor_params["params"], agent.actor)
    for q in ("q1", "q2"):
        for module in (getattr(agent, f"qf{q[1]}"), getattr(agent, f"qf{q[1]}_target")):
            linen_to_torch(critic_params["params"][q], module)
    optimizers = pt.Optimizers(
        torch.optim.Adam([*agent.qf1.parameters(), *agent.qf2.parameters()], lr=torch_args.q_lr, fused=True),
        torch.optim.Adam(agent.actor.parameters(), lr=torch_args.policy_lr, fused=True),
        torch.optim.Adam([agent.log_alpha], lr=torch_args.q_lr, fused=True),
    )
    alpha = agent.log_alpha.detach().exp()

    batch = jx.Transitions(*map(jnp.asarray, (obs, action, reward, next_obs, terminated)))
    torch_batch = pt.Transitions(*map(torch.tensor, (obs, action, reward, next_obs, terminated)))
    learner, info = jx.update_critic(learner, batch, jnp.asarray(noise), jax_args)
    torch_info = pt.update_critic(agent, optimizers, torch_batch, torch.tensor(noise), alpha, torch_args)
    learner, actor_info = jx.update_actor(learner, batch.obs, actor_noise, alpha_noise, -2.0, jax_args)
    torch_actor_info = pt.update_actor(
        agent, optimizers, torch_batch.obs, torch.tensor(actor_noise), torch.tensor(alpha_noise), alpha, -2.0, torch_args
    )

    close = lambda a, b: np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    for name in ("qf_loss", "qf1_values", "qf2_values"):
        close(info[name], torch_info[name])
    for name in ("actor_loss", "alpha_loss"):
        close(actor_info[name], torch_actor_info[name])
    for q in ("q1", "q2"):
        torch_q = getattr(agent, f"qf{q[1]}")
        layers = [m for m in torch_q.modules() if isinstance(m, torch.nn.Linear)]
        for i, linear in enumerate(layers):
            close(np.asarray(learner.critic.params["params"][q][f"Dense_{i}"]["kernel"]).T, linear.weight)
            close(learner.critic.params["params"][q][f"Dense_{i}"]["bias"], linear.bias)
    layers = [m for m in agent.actor.modules() if isinstance(m, torch.nn.Linear)]
    for i, linear in enumerate(layers):
        close(np.asarray(learner.actor.params["params"][f"Dense_{i}"]["kernel"]).T, linear.weight)
        close(learner.actor.params["params"][f"Dense_{i}"]["bias"], linear.bias)
    close(learner.log_alpha.params["log_alpha"], agent.log_alpha)
    close(jnp.exp(learner.log_alpha.params["log_alpha"]), alpha)  # torch's alpha follows log alpha in place
    assert not np.allclose(np.asarray(learner.log_alpha.params["log_alpha"]), 0)  # the updates moved something


@pytest.mark.slow
@pytest.mark.parametrize("name", SAC)
def test_each_script_learns_pendulum(name, tmp_path):
    """CleanRL's SAC reaches about -150 to -250 on Pendulum-v1 by 10-15k steps."""
    flags = ["--no-cuda", "--no-tensorboard", "--quiet", "--total-timesteps", "15000", "--learning-starts", "1000"]
    proc = run(name, *flags, "--json-out", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "run.json").read_text())["final_return"] > -300


def test_the_final_return_is_the_end_of_the_run_whatever_an_iterations_size():
    """20 iterations whose episodes return -1000 + 50 i: final_return averages the last tenth of them (2), not the
    last 10, which for a run of 20 big iterations is its second half."""
    import contextlib
    import time

    import jax

    module = load("jax_linen")
    args = module.Args(quiet=True, tensorboard=False, total_timesteps=21000, learning_starts=1000)
    count_compiles()  # as a script's train does first: a Log refuses to start without it
    log = Log(args, "jax_linen", {"jax": jax.devices("cpu")[0]}, module.LIBRARIES, 20, time.perf_counter(), 1000, 0)
    for i in range(20):
        with log.timed(contextlib.nullcontext()):
            pass
        log.iteration({"episodes": 5, "return_sum": 5 * (-1000.0 + 50 * i), "length_sum": 1000})
    record = log.record({"w": np.zeros(3)})
    assert record["final_window"] == 2 and record["episodes"] == [5] * 20
    assert record["final_return"] == pytest.approx((-1000 + 50 * 18 - 1000 + 50 * 19) / 2)


def test_a_record_made_before_final_window_gets_its_final_return_made_again_for_the_new_window():
    from report.records import final_return

    old = {"episodic_return": [float(i) for i in range(19)], "final_return": 13.5}  # the mean of its last 10
    assert final_return(old) == pytest.approx((17 + 18) / 2)  # its last 2 of 19
    hundred = {"episodic_return": [float(i) for i in range(100)], "final_return": 123.0}  # 10 of 100: as recorded
    assert final_return(hundred) == 123.0
    assert final_return({"episodic_return": [1.0, 2.0], "final_return": 7.0, "final_window": 1}) == 7.0
