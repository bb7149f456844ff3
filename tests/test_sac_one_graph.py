"""studies/sac_one_graph.py: its one-graph updates (torch.func's gradients, torch.optim's functional Adam) do what
sac_torch_compile.py's do, from the same start, to float rounding; so its timing compares two forms of one
computation. Run eagerly here (no compilation: a second); the study's quick run compiles them."""

import copy
import json

import numpy as np
import pytest

from conftest import ROOT, load
from studies import sac_one_graph


def updated(module, critic_noise, actor_noise, alpha_noise):
    """An agent of module's from seed 0, after one critic and one actor (and alpha) update on one random batch, as
    train makes them; its parameters, log alpha and the updates' infos."""
    import torch

    args = module.Args(hidden="16,16")
    low, high = np.float32([-2.0, -1.0]), np.float32([2.0, 0.5])
    torch.manual_seed(0)
    agent = module.Agent(3, 2, (16, 16), low, high)
    rate = lambda lr: dict(lr=lr, foreach=True)  # eager: torch.optim takes capturable on a CPU only when compiling
    optimizers = module.Optimizers(
        torch.optim.Adam([*agent.qf1.parameters(), *agent.qf2.parameters()], **rate(args.q_lr)),
        torch.optim.Adam(agent.actor.parameters(), **rate(args.policy_lr)),
        torch.optim.Adam([agent.log_alpha], **rate(args.q_lr)),
    )
    alpha = agent.log_alpha.detach().exp()
    rng = np.random.default_rng(3)
    obs, next_obs = rng.normal(size=(2, 64, 3)).astype(np.float32)
    action = rng.uniform(low, high, size=(64, 2)).astype(np.float32)
    reward, terminated = rng.normal(size=64).astype(np.float32), (rng.uniform(size=64) < 0.1).astype(np.float32)
    batch = module.Transitions(*map(torch.tensor, (obs, action, reward, next_obs, terminated)))
    info = module.update_critic(agent, optimizers, batch, critic_noise, alpha, args)
    info |= module.update_actor(agent, optimizers, batch.obs, actor_noise, alpha_noise, alpha, -2.0, args)
    for _ in range(2):  # a second step: Adam's moments and step count carried over
        info = module.update_critic(agent, optimizers, batch, critic_noise, alpha, args)
    return [p.detach().clone() for p in agent.parameters()], alpha, info


def test_the_one_graph_updates_agree_with_the_scripts_from_the_same_start():
    import torch

    noise = [torch.tensor(np.random.default_rng(i).normal(size=(64, 2)).astype(np.float32)) for i in range(3)]
    script = load("sac_torch_compile", "sac_torch_compile.py")
    params, alpha, info = updated(script, *copy.deepcopy(noise))
    params_1g, alpha_1g, info_1g = updated(sac_one_graph.loaded("one_graph"), *copy.deepcopy(noise))
    close = lambda a, b: np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-7)
    for p, q in zip(params, params_1g, strict=True):
        close(p, q)
    close(alpha, alpha_1g)
    assert info.keys() == info_1g.keys()
    for name in info:
        close(info[name], info_1g[name])
    start = updated(script, *[torch.zeros_like(z) for z in noise])[0]
    assert not all(torch.equal(p, q) for p, q in zip(params, start))  # the noise reaches the updates


@pytest.mark.slow  # compiles two forms of the updates: minutes on 2 cores
def test_a_quick_run_writes_its_result_and_every_form_compiles_nothing_after_iteration_0(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "one-graph.json"
    done = subprocess.run(
        [sys.executable, "-m", "studies.sac_one_graph", "--quick", "--out", str(out)], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    forms = {r["form"]: r for r in result["runs"]}
    assert forms.keys() == {"eager", "compiled", "one_graph"}
    assert forms["one_graph"]["graph_breaks"] == 0 < forms["compiled"]["graph_breaks"]
    assert all(r["compiles_after_first_iteration"] == 0 for r in result["runs"])


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    import subprocess
    import sys

    for flags in (["--blocks", "0"], ["--one", "eager"], ["--one", "jit"]):
        done = subprocess.run(
            [sys.executable, "-m", "studies.sac_one_graph", *flags], cwd=ROOT, capture_output=True, text=True
        )
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), (flags, done.stderr)
