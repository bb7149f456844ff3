"""What only the torch scripts promise: compiled frames that never recompile, no host reads in the
loop, the network's init, and the learning rate schedule."""

import dataclasses
import logging
import sys
import traceback
import types
from pathlib import Path

import numpy as np
import pytest
from tensorboard.util import tensor_util

from benchback.cli import main
from benchback.compiles import COMPILES
from conftest import QUIET, SHORT_ARGS, TORCH_VARIANTS, load, make_batch, needs, reset_torch_compile, tensorboard_events


@needs("torch_compile")
def test_compiles_counts_dynamo_recompilations():
    load("torch_compile")
    import torch

    add_one = torch.compile(lambda x: x + 1, backend="eager", dynamic=False)  # dynamo alone: quick
    before = len(COMPILES)
    add_one(torch.zeros(2))
    add_one(torch.zeros(2))
    assert len(COMPILES) == before + 1
    add_one(torch.zeros(3))  # a new shape: a recompilation
    assert len(COMPILES) == before + 2


@needs("torch_compile")
def test_compiled_frames_exist_and_nothing_recompiles_after_iteration_0(tmp_path, monkeypatch, caplog):
    monkeypatch.chdir(tmp_path)
    module = load("torch_compile")
    import torch
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list as cache_entries

    torch._logging.set_logs(recompiles=True)  # explains any recompilation in the failure message
    try:
        with caplog.at_level(logging.DEBUG):
            record = module.train(module.Args(**SHORT_ARGS, **QUIET))
    finally:
        torch._logging.set_logs()
    assert record["compiles_after_first_iteration"] == 0, caplog.text

    # Compiled code hangs on the code objects of the functions dynamo compiled: one entry per
    # compilation. The action step, the critic, and the minibatch update (whose Adam step is a frame of
    # its own, with graph breaks around it that torch puts there, after which dynamo resumes in
    # minibatch_step) each have exactly one: compiled once, in iteration 0, and never again.
    closures = {c.co_name: c for c in module.train.__code__.co_consts if isinstance(c, types.CodeType)}
    frames = {
        "sample (the action step)": closures["sample"],
        "Agent.value (critic)": module.Agent.value.__code__,
        "learn_minibatch": closures["learn_minibatch"],
        "minibatch_step": module.minibatch_step.__code__,
        "Adam.step": torch.optim.Adam.step.__code__,
    }
    assert {name: len(cache_entries(code)) for name, code in frames.items()} == dict.fromkeys(frames, 1)


@needs("torch")
def test_no_host_reads_in_the_loop_and_lr_annealed_per_iteration(tmp_path, monkeypatch):
    """No .item()/float()/bool() of a tensor and no NumPy copy of a JAX array anywhere in training
    (each is a host sync on a GPU): the metrics come back once per iteration, by one .tolist()."""
    monkeypatch.chdir(tmp_path)
    module = load("torch")
    import jax
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    host_reads = []  # where each read happened: the innermost frame of the script or of torch.optim
    watched = (module.__file__, sys.modules[torch.optim.Adam.__module__].__file__)

    class HostReads(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func.__name__.startswith("_local_scalar_dense"):  # .item(), float(), bool(), int()
                frame = [f for f in traceback.extract_stack() if f.filename in watched][-1]
                host_reads.append(f"{Path(frame.filename).name}:{frame.name}")
            return func(*args, **(kwargs or {}))

    array_type = type(jax.numpy.zeros(1))
    value = array_type._value

    def counted_value(array):
        host_reads.append("jax.Array._value")
        return value.fget(array)

    monkeypatch.setattr(array_type, "_value", property(counted_value))
    args = module.Args(quiet=True, **SHORT_ARGS)
    with HostReads():
        record = module.train(args)
    assert host_reads == ["adam.py:__init__"]  # the one read: Adam checks 0 <= lr when it is built
    assert record["compiles_after_first_iteration"] == 0

    (run_dir,) = (tmp_path / "runs").iterdir()
    events = tensorboard_events(run_dir).Tensors("charts/learning_rate")
    rates = [float(tensor_util.make_ndarray(e.tensor_proto)) for e in events]
    # CleanRL: lr * (1 - i / num_iterations) for 0-based iteration i, constant within an update
    np.testing.assert_allclose(rates, [args.learning_rate * (1 - i / 3) for i in range(3)], rtol=1e-6)


@pytest.mark.parametrize("variant", TORCH_VARIANTS)
def test_network_init_and_observation_flattening(variant):
    module = load(variant)
    import torch

    torch.manual_seed(0)
    agent = module.Agent(obs_dim=10 * 10 * 4, hidden=(64, 32), num_actions=3, continuous=False)
    for mlp, head_gain in ((agent.actor, 0.01), (agent.critic, 1.0)):
        linears = [m for m in mlp if isinstance(m, torch.nn.Linear)]
        assert [tuple(m.weight.shape) for m in linears] == [(64, 400), (32, 64), (mlp[-1].out_features, 32)]
        for linear, gain in zip(linears, (np.sqrt(2), np.sqrt(2), head_gain)):
            w = linear.weight.detach().double()
            gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w  # orthogonal rows or columns
            np.testing.assert_allclose(gram.numpy(), gain**2 * np.eye(min(w.shape)), atol=1e-5)
            assert not linear.bias.any()
    obs = torch.rand(5, 10, 10, 4) < 0.5  # a MinAtar-like boolean grid
    policy, value = agent(obs)
    logits = policy.logits
    assert (
        policy.log_std is None
        and logits.shape == (5, 3)
        and value.shape == (5,)
        and logits.dtype == value.dtype == torch.float32
    )
    torch.testing.assert_close(agent.value(obs), value)
    torch.testing.assert_close(agent.policy(obs).logits, logits)


@pytest.mark.parametrize("variant", TORCH_VARIANTS)
def test_act_samples_from_the_softmax_of_the_logits(variant):
    """As each script runs it: torch_compile's policy step compiled, with inductor's own random numbers."""
    module = load(variant)
    import torch

    torch.manual_seed(0)
    logits = torch.tensor([[0.0, 1.0, -1.0, 2.0], [3.0, -30.0, 0.0, 0.5]]).repeat(100_000, 1)
    agent = types.SimpleNamespace(policy=lambda obs: module.Policy(obs, None))  # the logits are the "observations"
    act = module.act
    if variant == "torch_compile":
        act = torch.compile(act, dynamic=False)
    action, logprob = act(agent, logits)
    for row in range(2):
        frequencies = torch.bincount(action[row::2], minlength=4).double() / 100_000
        np.testing.assert_allclose(frequencies.numpy(), logits[row].softmax(-1).double().numpy(), atol=0.005)
    torch.testing.assert_close(logprob, logits.log_softmax(-1).gather(-1, action[:, None]).squeeze(-1))


@needs("torch")
def test_act_draws_what_categorical_sample_draws():
    """The sampler is torch.multinomial's own for one sample, written out: from the same seed it picks
    the same actions as CleanRL's Categorical(logits=...).sample()."""
    module = load("torch")
    import torch

    torch.manual_seed(1)
    logits = 3 * torch.randn(8192, 3)
    agent = types.SimpleNamespace(policy=lambda obs: module.Policy(obs, None))
    torch.manual_seed(0)
    action, _ = module.act(agent, logits)
    torch.manual_seed(0)
    expected = torch.distributions.Categorical(logits=logits).sample()
    assert torch.equal(action, expected)


@needs("torch", "torch_compile")
def test_compiled_updates_follow_the_eager_ones_over_iterations():
    """Four iterations of updates (2 epochs of 4 minibatches each) from the same start, the learning
    rate annealed in place between them as train() does: ppo_torch_compile.py's minibatch step,
    compiled as its train() compiles it (loss.backward() traced into the graph, foreach Adam with a
    tensor learning rate), against ppo_torch.py's eager one (fused Adam). After every iteration the
    parameters, Adam's moments and step count, and the metrics agree: a compiled graph that read a
    stale learning rate, kept gradients across calls or clipped differently would drift apart here."""
    import torch

    eager, compiled = load("torch"), load("torch_compile")
    args = eager.Args(update_epochs=2, num_minibatches=4)
    iterations = 4
    rng, n = np.random.default_rng(0), 256
    data = dict(
        obs=rng.normal(size=(n, 4)).astype(np.float32),
        action=rng.integers(0, 2, n),
        logprob=(-0.2 - rng.random(n)).astype(np.float32),
        value=rng.normal(size=n).astype(np.float32),
        advantage=rng.normal(size=n).astype(np.float32),
        returns=10 * rng.normal(size=n).astype(np.float32),
    )  # large errors: the gradients get clipped
    history = {}
    for module in (eager, compiled):
        torch.manual_seed(0)
        agent = module.Agent(obs_dim=4, hidden=(16, 16), num_actions=2, continuous=False)
        lr = torch.tensor(args.learning_rate)
        if module is eager:
            optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5, fused=True)
            learn = lambda batch, index: module.minibatch_step(agent, optimizer, batch, index, args)
        else:
            optimizer = torch.optim.Adam(agent.parameters(), lr=lr, eps=1e-5, foreach=True, capturable=True)
            learn = torch.compile(
                lambda batch, index: module.minibatch_step(agent, optimizer, batch, index, args), dynamic=False
            )
        history[module.VARIANT] = []
        with torch._dynamo.config.patch(trace_autograd_ops=True), torch._inductor.config.patch(cpp_wrapper=True):
            torch.manual_seed(1)  # the minibatch permutations
            for iteration in range(iterations):
                lr.fill_(args.learning_rate * (1.0 - iteration / iterations))
                metrics = module.update(learn, make_batch(module.VARIANT, module, **data), args)
                state = [optimizer.state[p] for p in agent.parameters()]
                history[module.VARIANT].append(
                    {
                        "parameters": [p.detach().clone() for p in agent.parameters()],
                        "exp_avg": [s["exp_avg"].clone() for s in state],
                        "exp_avg_sq": [s["exp_avg_sq"].clone() for s in state],
                        "step": [float(s["step"]) for s in state],
                        "metrics": metrics,
                        "gradients left": [p.grad is not None for p in agent.parameters()],
                    }
                )
    torch.manual_seed(0)
    start = eager.Agent(obs_dim=4, hidden=(16, 16), num_actions=2, continuous=False).parameters()
    final = history["torch"][-1]["parameters"]
    assert all((p - p0).abs().max() > 1e-4 for p, p0 in zip(final, start))  # every parameter moved
    for iteration, (want, got) in enumerate(zip(history["torch"], history["torch_compile"])):
        assert got["step"] == want["step"] == [8.0 * (iteration + 1)] * len(want["step"])
        assert got["gradients left"] == want["gradients left"]
        for key in ("parameters", "exp_avg", "exp_avg_sq"):
            for got_tensor, want_tensor in zip(got[key], want[key]):
                torch.testing.assert_close(got_tensor, want_tensor, rtol=1e-4, atol=1e-6, msg=f"{key}, iteration {iteration}")
        for name, value in want["metrics"].items():
            torch.testing.assert_close(got["metrics"][name], value, rtol=1e-4, atol=1e-6, msg=f"{name}, iteration {iteration}")


@needs("torch_compile")
def test_cuda_graphs_are_refused_on_the_cpu_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    module = load("torch_compile")
    out = tmp_path / "run.json"
    assert main(module.Args, module.train, ["--cuda-graphs", "--json-out", str(out), "--total-timesteps", "8192"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --cuda-graphs needs an NVIDIA GPU") and "\n" not in err
    assert list(tmp_path.iterdir()) == []  # no record, no TensorBoard run


@pytest.mark.slow  # compiles twice: 12 s on 2 cores; gpu-check runs the path on a GPU
@needs("torch_compile")
def test_cuda_graphs_path_runs_and_computes_the_same_on_the_cpu(tmp_path, monkeypatch):
    """What of --cuda-graphs the CPU can settle: with its refusal bypassed, torch.compile's reduce-overhead mode
    leaves CPU code without graphs, so the script's own part of the path runs (every output cloned, the critic
    warmed up in iteration 0) and must give the same run as without it, compiling nothing after iteration 0.
    The graphs themselves only a GPU can check (benchmark.sh --preset gpu-check)."""
    monkeypatch.chdir(tmp_path)
    module = load("torch_compile")
    check_args = module.check_args
    monkeypatch.setattr(module, "check_args", lambda args: check_args(dataclasses.replace(args, cuda_graphs=False)))
    records = {}
    for graphs in (False, True):
        reset_torch_compile()
        records[graphs] = module.train(module.Args(**SHORT_ARGS, **QUIET, cuda_graphs=graphs))
    assert records[True]["args"]["cuda_graphs"] and not records[False]["args"]["cuda_graphs"]
    assert records[True]["compiles_after_first_iteration"] == 0
    assert records[True]["episodic_return"] == records[False]["episodic_return"]
    assert records[True]["final_return"] == records[False]["final_return"]
