"""The torch TD3 scripts, td3_torch.py and td3_torch_compile.py: bad input is refused in one line; from Linen's start
(td3_jax_linen.py's parameters) and fed the same noise, td3_torch.py's critic and actor updates (the targets' move
included) agree with Linen's to float rounding, and td3_torch_compile.py's compiled ones with td3_torch.py's eager ones;
a tiny run of each from its command line writes a record, the compiled one compiling nothing after iteration 0, and the
two, drawing the same noise, end with the same returns. A learning check on Pendulum-v1 is marked slow."""

import copy
import json
import subprocess
import sys
import time

import numpy as np
import pytest

from benchback.cli import main
from conftest import ROOT, in_background
from conftest import load as load_script
from test_sac import TINY, linen_to_torch

TORCH = ("torch", "torch_compile")  # the variants: td3_torch.py, td3_torch_compile.py
# The same-start checks' sizes and settings: target policy smoothing's noise wide enough that both of its clips (the
# noise's, the action's to the bounds) bind on some rows, and a tau at which the targets' move shows beside rounding.
OBS_DIM, ACTION_DIM, HIDDEN, N = 3, 2, (64, 64), 256
LOW, HIGH = np.float32([-2.0, -1.0]), np.float32([2.0, 0.5])
SAME = dict(hidden="64,64", policy_noise=0.6, noise_clip=0.9, tau=0.25)  # lerp_ below 0.5: self + w * (end - self)
ROUNDS = 2  # the second critic update reads the targets and the target actor the first actor update moved


def load(name: str):
    """td3_{name}.py imported as a module, once per test process (conftest.load)."""
    return load_script(f"td3_{name}", f"td3_{name}.py")


def same_start_rounds() -> list:
    """Per round a batch (obs, action, reward, next_obs, terminated) and the critic update's standard normal noise."""
    rng = np.random.default_rng(3)
    rounds = []
    for _ in range(ROUNDS):
        obs, next_obs = rng.normal(size=(2, N, OBS_DIM)).astype(np.float32)
        action = rng.uniform(LOW, HIGH, size=(N, ACTION_DIM)).astype(np.float32)
        reward, terminated = rng.normal(size=N).astype(np.float32), (rng.uniform(size=N) < 0.1).astype(np.float32)
        rounds.append(((obs, action, reward, next_obs, terminated), rng.normal(size=(N, ACTION_DIM)).astype(np.float32)))
    return rounds


BAD = [
    ["--noise-clip", "-1"],
    ["--policy-noise", "nan"],
    ["--exploration-noise", "-0.1"],
    ["--learning-rate", "0"],
    ["--policy-frequency", "0"],
    ["--env-id", "CartPole-v1"],  # discrete actions
    ["--tau", "2"],
]


@pytest.mark.parametrize("name", TORCH)
@pytest.mark.parametrize("bad", BAD, ids=lambda flags: " ".join(flags))
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(name, bad, tmp_path, capsys, monkeypatch):
    module = load(name)
    monkeypatch.chdir(tmp_path)
    assert main(module.Args, module.train, [*TINY, "--json-out", "run.json", *bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    if "CartPole-v1" in bad:
        assert err[0] == "error: TD3 needs continuous actions; --env-id CartPole-v1 has discrete ones"
    assert list(tmp_path.iterdir()) == []  # no record, no TensorBoard run


def test_cuda_graphs_without_a_gpu_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    module = load("torch_compile")
    monkeypatch.chdir(tmp_path)
    assert main(module.Args, module.train, [*TINY, "--json-out", "run.json", "--cuda-graphs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--cuda-graphs needs" in err[0], err


def torch_layers(module) -> list:
    import torch

    return [m for m in module.modules() if isinstance(m, torch.nn.Linear)]


def test_from_linens_start_the_critic_and_actor_updates_agree_with_linens():
    """td3_torch.py's networks take td3_jax_linen.py's initial parameters (targets: copies); two rounds of one critic
    update and one actor update (with the targets' move), on the same batches and noise, leave the same losses and
    parameters, every target's included, to float rounding."""
    import jax
    import jax.numpy as jnp
    import optax
    import torch
    from flax.training.train_state import TrainState

    jx, pt = load("jax_linen"), load("torch")
    jax_args, torch_args = jx.Args(**SAME), pt.Args(**SAME)
    actor, critic = jx.Actor(HIDDEN, tuple((HIGH - LOW) / 2), tuple((HIGH + LOW) / 2)), jx.Critic(HIDDEN)
    rounds = same_start_rounds()
    (obs, action, *_), noise = rounds[0]
    actor_params, critic_params = actor.init(jax.random.key(0), obs), critic.init(jax.random.key(1), obs, action)
    adam = optax.adam(jax_args.learning_rate)
    learner = jx.Learner(
        TrainState.create(apply_fn=actor.apply, params=actor_params, tx=adam),
        TrainState.create(apply_fn=critic.apply, params=critic_params, tx=adam),
        actor_params,  # the targets start as copies (JAX's arrays are never written in place)
        critic_params,
    )
    agent = pt.Agent(OBS_DIM, ACTION_DIM, HIDDEN, LOW, HIGH)
    linen_params = lambda learner: {
        "actor": learner.actor.params["params"],
        "actor_target": learner.actor_target["params"],
        **{f"qf{i}": learner.critic.params["params"][f"q{i}"] for i in (1, 2)},
        **{f"qf{i}_target": learner.target_params["params"][f"q{i}"] for i in (1, 2)},
    }
    for name, params in linen_params(learner).items():
        linen_to_torch(params, getattr(agent, name))
    optimizers = pt.Optimizers(
        torch.optim.Adam([*agent.qf1.parameters(), *agent.qf2.parameters()], lr=torch_args.learning_rate, fused=True),
        torch.optim.Adam(agent.actor.parameters(), lr=torch_args.learning_rate, fused=True),
    )

    # Both of target policy smoothing's clips bind somewhere in the first round: the noise's, and the action's
    smoothing = noise * SAME["policy_noise"]
    assert (np.abs(smoothing) > SAME["noise_clip"]).any() and (np.abs(smoothing) < SAME["noise_clip"]).any()
    next_action = np.asarray(actor.apply(actor_params, rounds[0][0][3]))  # the target actor's, at next_obs
    unclipped = next_action + smoothing.clip(-SAME["noise_clip"], SAME["noise_clip"]) * (HIGH - LOW) / 2
    assert ((unclipped < LOW) | (unclipped > HIGH)).any()

    close = lambda a, b: np.testing.assert_allclose(np.asarray(a), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    for arrays, noise in rounds:
        batch, torch_batch = jx.Transitions(*map(jnp.asarray, arrays)), pt.Transitions(*map(torch.tensor, arrays))
        learner, info = jx.update_critic(learner, batch, jnp.asarray(noise), LOW, HIGH, jax_args)
        torch_info = pt.update_critic(agent, optimizers, torch_batch, torch.tensor(noise), torch_args)
        for name in ("qf_loss", "qf1_loss", "qf2_loss", "qf1_values", "qf2_values"):
            close(info[name], torch_info[name])
        learner, loss = jx.update_actor(learner, batch.obs, jax_args)
        close(loss, pt.update_actor(agent, optimizers, torch_batch.obs, torch_args)["actor_loss"])
    for name, params in linen_params(learner).items():
        for i, linear in enumerate(torch_layers(getattr(agent, name))):
            close(np.asarray(params[f"Dense_{i}"]["kernel"]).T, linear.weight)
            close(params[f"Dense_{i}"]["bias"], linear.bias)
    start = actor_params["params"]["Dense_0"]["bias"]  # the updates moved the target actor
    assert not np.allclose(np.asarray(learner.actor_target["params"]["Dense_0"]["bias"]), start, rtol=0, atol=1e-5)


@pytest.mark.slow  # compiles both updates: 10 s or more on 2 cores, as SAC's twin
def test_from_the_same_start_the_compiled_updates_agree_with_eager_torchs():
    """td3_torch.py's agent, copied; two rounds of one critic and one actor update (with the targets' move) each, on the
    same batches and noise, as each script's train makes them: eager with fused Adam, compiled with foreach capturable
    Adam and a tensor rate. Inductor may reorder float operations: rtol 1e-4."""
    import torch

    eager, pc = load("torch"), load("torch_compile")
    args = pc.Args(**SAME)
    torch.manual_seed(0)
    agent = eager.Agent(OBS_DIM, ACTION_DIM, HIDDEN, LOW, HIGH)
    twin = pc.Agent(OBS_DIM, ACTION_DIM, HIDDEN, LOW, HIGH)
    twin.load_state_dict(copy.deepcopy(agent.state_dict()))
    start = agent.actor_target.fc_mu.bias.detach().clone()
    q = lambda a: [*a.qf1.parameters(), *a.qf2.parameters()]
    optimizers = eager.Optimizers(
        torch.optim.Adam(q(agent), lr=args.learning_rate, fused=True),
        torch.optim.Adam(agent.actor.parameters(), lr=args.learning_rate, fused=True),
    )
    lr = torch.tensor(args.learning_rate)
    twin_optimizers = pc.Optimizers(
        torch.optim.Adam(q(twin), lr=lr, foreach=True, capturable=True),
        torch.optim.Adam(twin.actor.parameters(), lr=lr.clone(), foreach=True, capturable=True),
    )
    critic_step = torch.compile(lambda b, z: pc.update_critic(twin, twin_optimizers, b, z, args), dynamic=False)
    actor_step = torch.compile(lambda o: pc.update_actor(twin, twin_optimizers, o, args), dynamic=False)

    close = lambda a, b: np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-6)
    for arrays, noise in same_start_rounds():
        batch, noise = eager.Transitions(*map(torch.tensor, arrays)), torch.tensor(noise)
        info = eager.update_critic(agent, optimizers, batch, noise, args)
        twin_info = critic_step(pc.Transitions(*batch), noise)
        for name in ("qf_loss", "qf1_loss", "qf2_loss", "qf1_values", "qf2_values"):
            close(info[name], twin_info[name])
        close(eager.update_actor(agent, optimizers, batch.obs, args)["actor_loss"], actor_step(batch.obs)["actor_loss"])
    names = [name for name, _ in agent.named_parameters()]
    assert [name for name, _ in twin.named_parameters()] == names and any("actor_target" in n for n in names)
    for p, twin_p in zip(agent.parameters(), twin.parameters()):
        close(p, twin_p)
    assert not torch.allclose(agent.actor_target.fc_mu.bias, start)  # the updates moved the target actor


def run(name: str, *flags: str, cwd) -> subprocess.Popen:
    command = [sys.executable, str(ROOT / f"td3_{name}.py"), *flags]
    return subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def tiny_runs(directory) -> dict:
    """Both scripts' processes on TINY, started together: {name: (exit code, stderr, the record or None)}."""
    procs = {}
    for name in TORCH:
        (directory / name).mkdir()
        procs[name] = run(name, *TINY, "--json-out", "run.json", cwd=directory / name)
    done = {}
    for name, proc in procs.items():
        _, err = proc.communicate(timeout=600)
        path = directory / name / "run.json"
        done[name] = proc.returncode, err, json.loads(path.read_text()) if path.exists() else None
    return done


@in_background(tiny_runs)
def test_a_tiny_run_of_each_writes_a_record_and_both_end_with_the_same_returns(background):
    for name, (returncode, err, record) in background.items():
        assert returncode == 0, err[-3000:]
        assert (record["variant"], record["algorithm"], record["status"]) == (name, "td3", "ok")
        assert record["random_steps"] == 100 and record["env_steps"] == 500  # 100 random, 5 iterations of 2 x 40
        assert len(record["iteration_durations"]) == 5 and record["grad_steps"] == 5 * 40 * 2
        # actor: 3*32+32 + 32*32+32 + 32+1; each Q network: 4*32+32 + 32*32+32 + 32+1 (the targets only follow)
        assert record["param_count"] == (128 + 1056 + 33) + 2 * (160 + 1056 + 33)
        assert record["compiles_after_first_iteration"] == 0
        assert record["episodes"] == [0, 0, 0, 2, 0] and record["episodic_return"][3] is not None
    # The noise is drawn eagerly in both, in the same order: the same run, to the compiled updates' rounding
    eager, compiled = (background[name][2]["episodic_return"][3] for name in TORCH)
    assert compiled == pytest.approx(eager, rel=1e-3)


@pytest.mark.slow
def test_td3_torch_learns_pendulum(tmp_path):
    """CleanRL's TD3 reaches about -150 to -250 on Pendulum-v1 by 10-15k steps."""
    flags = ["--no-cuda", "--no-tensorboard", "--quiet", "--total-timesteps", "15000", "--learning-starts", "1000"]
    start = time.perf_counter()
    proc = run("torch", *flags, "--hidden", "64,64", "--json-out", "run.json", cwd=tmp_path)
    _, err = proc.communicate(timeout=1200)
    assert proc.returncode == 0, err[-3000:]
    record = json.loads((tmp_path / "run.json").read_text())
    print(f"td3_torch: final_return {record['final_return']:.1f} in {time.perf_counter() - start:.0f} s")
    assert record["final_return"] > -400
