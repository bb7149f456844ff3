"""sac_torch_compile.py: sac_torch.py with torch.compile. Its run writes a record that compiles
nothing after iteration 0, dynamo's compilations counted in iteration 0; --cuda-graphs without a GPU is refused in one
line; and from the same weights and batch its compiled critic and actor updates agree with sac_torch.py's eager ones to
float rounding (inductor may reorder float operations)."""

import copy
import json

import numpy as np
import pytest

from benchback.cli import main
from benchback.compiles import COMPILES
from conftest import ROOT
from test_layout import calls_in_train
from test_sac import TINY, load

SCRIPT = ROOT / "sac_torch_compile.py"


def load_compiled():
    from conftest import load as load_script

    return load_script("sac_torch_compile", "sac_torch_compile.py")


def test_the_compile_call_stands_in_train():
    module = load_compiled()
    assert module.TOOLING["compiles"] in calls_in_train(SCRIPT.read_text())


@pytest.mark.slow  # 40 s on 2 cores; td3_torch_compile.py's tiny run checks the same by default (test_td3_torch)
def test_a_run_writes_a_record_with_dynamos_compiles_in_iteration_0_alone(tmp_path, monkeypatch):
    module = load_compiled()
    monkeypatch.chdir(tmp_path)
    before = COMPILES.count("dynamo")
    assert main(module.Args, module.train, [*TINY, "--json-out", "run.json"]) == 0
    record = json.loads((tmp_path / "run.json").read_text())
    assert (record["variant"], record["algorithm"], record["status"]) == ("torch_compile", "sac", "ok")
    assert record["env_steps"] == 500 and record["grad_steps"] == 5 * 40 * 2
    assert record["compiles_after_first_iteration"] == 0
    assert COMPILES.count("dynamo") > before  # the policy step, the critic and actor updates


def test_cuda_graphs_without_a_gpu_is_one_line_and_exit_2_and_writes_nothing(tmp_path, capsys, monkeypatch):
    module = load_compiled()
    monkeypatch.chdir(tmp_path)
    assert main(module.Args, module.train, [*TINY, "--json-out", "run.json", "--cuda-graphs"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "--cuda-graphs needs" in err[0], err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # compiles both updates: most of a minute on 2 cores
def test_from_the_same_start_the_compiled_updates_agree_with_sac_torchs():
    """sac_torch.py's agent, copied; one critic and one actor (and alpha) update each, on the same batch and noise, as
    each script's train makes them: eager with fused Adam, compiled with foreach capturable Adam and tensor rates."""
    import torch

    eager, pc = load("torch"), load_compiled()
    args = pc.Args(hidden="64,64")
    obs_dim, action_dim, hidden, n = 3, 2, (64, 64), 256
    low, high = np.float32([-2.0, -1.0]), np.float32([2.0, 0.5])
    torch.manual_seed(0)
    agent = eager.Agent(obs_dim, action_dim, hidden, low, high)
    twin = pc.Agent(obs_dim, action_dim, hidden, low, high)
    twin.load_state_dict(copy.deepcopy(agent.state_dict()))
    q = lambda a: [*a.qf1.parameters(), *a.qf2.parameters()]
    optimizers = eager.Optimizers(
        torch.optim.Adam(q(agent), lr=args.q_lr, fused=True),
        torch.optim.Adam(agent.actor.parameters(), lr=args.policy_lr, fused=True),
        torch.optim.Adam([agent.log_alpha], lr=args.q_lr, fused=True),
    )
    rate = lambda lr: dict(lr=torch.tensor(lr), foreach=True, capturable=True)
    twin_optimizers = pc.Optimizers(
        torch.optim.Adam(q(twin), **rate(args.q_lr)),
        torch.optim.Adam(twin.actor.parameters(), **rate(args.policy_lr)),
        torch.optim.Adam([twin.log_alpha], **rate(args.q_lr)),
    )
    alpha, twin_alpha = agent.log_alpha.detach().exp(), twin.log_alpha.detach().exp()
    critic_step = torch.compile(lambda b, z: pc.update_critic(twin, twin_optimizers, b, z, twin_alpha, args), dynamic=False)
    actor_step = torch.compile(
        lambda o, z, za: pc.update_actor(twin, twin_optimizers, o, z, za, twin_alpha, -2.0, args), dynamic=False
    )

    rng = np.random.default_rng(3)
    obs, next_obs = rng.normal(size=(2, n, obs_dim)).astype(np.float32)
    action = rng.uniform(low, high, size=(n, action_dim)).astype(np.float32)
    reward, terminated = rng.normal(size=n).astype(np.float32), (rng.uniform(size=n) < 0.1).astype(np.float32)
    noise, actor_noise, alpha_noise = map(torch.tensor, rng.normal(size=(3, n, action_dim)).astype(np.float32))
    batch = eager.Transitions(*map(torch.tensor, (obs, action, reward, next_obs, terminated)))
    info = eager.update_critic(agent, optimizers, batch, noise, alpha, args)
    twin_info = critic_step(pc.Transitions(*batch), noise)
    actor_info = eager.update_actor(agent, optimizers, batch.obs, actor_noise, alpha_noise, alpha, -2.0, args)
    twin_actor_info = actor_step(batch.obs, actor_noise, alpha_noise)

    close = lambda a, b: np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-6)
    for name in ("qf_loss", "qf1_loss", "qf2_loss", "qf1_values", "qf2_values"):
        close(info[name], twin_info[name])
    for name in ("actor_loss", "alpha_loss", "alpha"):
        close(actor_info[name], twin_actor_info[name])
    for p, twin_p in zip(agent.parameters(), twin.parameters()):
        close(p, twin_p)
    close(alpha, twin_alpha)
    assert not np.allclose(agent.log_alpha.item(), 0)  # the updates moved something
