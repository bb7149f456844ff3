"""The DQN scripts, dqn_*.py: each refuses bad input in one line; from Linen's parameters, on the same batches, NNX's,
Equinox's and torch's (eager and compiled) gradient steps agree with Linen's to float rounding, and the target network
moves every target_network_frequency steps of the envs only, tau toward the Q network (with tau 1 a copy, exactly); a
tiny run of each from its command line writes a record of its work that compiles nothing after iteration 0."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchback.cli import main
from conftest import ROOT, in_background
from conftest import load as load_script
from test_sac import linen_to_torch
from test_sac_jax import load_linen

VARIANTS = ("jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile")
TINY = ["--no-cuda", "--no-tensorboard", "--quiet", "--total-timesteps", "500", "--learning-starts", "100"]
# the target first moves in iteration 1, not 0: what torch.compile first compiles there is a compile after iteration 0
TINY += ["--num-envs", "2", "--steps-per-iteration", "40", "--train-frequency", "10", "--target-network-frequency", "80"]
TINY += ["--buffer-size", "128", "--batch-size", "32", "--hidden", "32,32"]
OBS_DIM, NUM_ACTIONS, HIDDEN, N = 4, 3, (32, 32), 64
SAME = dict(hidden="32,32", train_frequency=10, target_network_frequency=20)  # the target moves every second step


def load(name: str):
    """dqn_{name}.py imported as a module, once per test process (conftest.load)."""
    return load_script(f"dqn_{name}", f"dqn_{name}.py")


def tiny_run(directory, name: str):
    """The script's process on TINY, and its record (None without one): run beside the other tests."""
    command = [sys.executable, str(ROOT / f"dqn_{name}.py"), *TINY, "--json-out", "run.json"]
    proc = subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=600)
    return proc, json.loads((directory / "run.json").read_text()) if (directory / "run.json").exists() else None


# Linen's and eager torch's by default; NNX's, Equinox's and torch.compile's (compiling: about 40 s) under the slow marker
@pytest.mark.parametrize(
    "name", [n if n in ("jax_linen", "torch") else pytest.param(n, marks=pytest.mark.slow) for n in VARIANTS]
)
@in_background(tiny_run)
def test_a_run_from_the_command_line_writes_a_record_of_its_work(name, background):
    proc, record = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (record["variant"], record["algorithm"], record["status"]) == (name, "dqn", "ok")
    # 50 random steps of 2 envs; 5 iterations of 2 envs x 40 steps, a gradient step every 10 of them
    assert record["random_steps"] == 100 and record["env_steps"] == 500 and record["grad_steps"] == 5 * 4
    assert record["param_count"] == (4 * 32 + 32) + (32 * 32 + 32) + (32 * 2 + 2)  # the target is not trained
    assert record["compiles_after_first_iteration"] == 0
    assert sum(record["episodes"]) > 0 and record["random_episodes"] > 0  # CartPole's random episodes are short


BAD = [
    (["--train-frequency", "0"], "--train-frequency must be positive"),
    (["--steps-per-iteration", "45"], "--steps-per-iteration 45 is not a multiple of --train-frequency 10"),
    (["--target-network-frequency", "25"], "--target-network-frequency 25 is not a multiple of --train-frequency 10"),
    (["--start-e", "1.5"], "--start-e must be between 0 and 1"),
    (["--exploration-fraction", "0"], "--exploration-fraction must be positive"),
    (["--env-id", "Pendulum-v1"], "DQN needs discrete actions; --env-id Pendulum-v1 has continuous ones"),
]


@pytest.mark.parametrize("name", VARIANTS)
@pytest.mark.parametrize("bad, said", BAD, ids=lambda x: " ".join(x) if isinstance(x, list) else "")
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(name, bad, said, tmp_path, capsys, monkeypatch):
    module = load(name)
    monkeypatch.chdir(tmp_path)
    assert main(module.Args, module.train, [*TINY, "--json-out", "run.json", *bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and said in err[0], err
    assert list(tmp_path.iterdir()) == []  # no record, no TensorBoard run


def batches(rounds: int = 3) -> list:
    """Per round a batch (obs, action, reward, next_obs, terminated) of N rows."""
    rng = np.random.default_rng(5)
    made = []
    for _ in range(rounds):
        obs, next_obs = rng.normal(size=(2, N, OBS_DIM)).astype(np.float32)
        action = rng.integers(0, NUM_ACTIONS, size=N)
        reward, terminated = rng.normal(size=N).astype(np.float32), (rng.uniform(size=N) < 0.1).astype(np.float32)
        made.append((obs, action, reward, next_obs, terminated))
    return made


def linen_start():
    """dqn_jax_linen.py's QNetwork and its initial parameters."""
    import jax

    module = load("jax_linen")
    network = module.QNetwork(HIDDEN, NUM_ACTIONS)
    return network, network.init(jax.random.key(0), np.zeros((1, OBS_DIM), np.float32))


def steps_of(name: str, params: dict):
    """A function that takes one gradient step on a batch, from Linen's parameters, as the script's train takes it, and
    returns (its info, the Q network's parameters, the target's) as Linen's (kernel (in, out), bias) pairs."""
    import jax
    import jax.numpy as jnp
    import optax

    module = load(name)
    args = module.Args(**SAME)
    if name.startswith("torch"):
        import copy

        import torch

        q_network = module.QNetwork(OBS_DIM, HIDDEN, NUM_ACTIONS)
        linen_to_torch(params["params"], q_network)
        target_network = copy.deepcopy(q_network)
        if name == "torch":
            optimizer = torch.optim.Adam(q_network.parameters(), lr=args.learning_rate, fused=True)
            step = lambda batch, k: module.update(q_network, target_network, optimizer, batch, k, args)
        else:
            lr = torch.tensor(args.learning_rate)
            optimizer = torch.optim.Adam(q_network.parameters(), lr=lr, foreach=True, capturable=True)
            q_step = torch.compile(lambda batch: module.update_q(q_network, target_network, optimizer, batch, args))
            target_step = torch.compile(lambda: module.move_target(q_network, target_network, args))
            step = lambda batch, k: module.update(q_step, target_step, batch, k, args)
        pairs = lambda net: [
            (m.weight.detach().numpy().T.copy(), m.bias.detach().numpy().copy())
            for m in net.modules()
            if isinstance(m, torch.nn.Linear)
        ]
        count = [0]

        def torch_step(batch):
            obs, action, reward, next_obs, terminated = map(torch.tensor, batch)
            count[0] += 1
            info = step(module.Transitions(obs, action.long(), reward, next_obs, terminated), count[0])
            return {k: float(v) for k, v in info.items()}, pairs(q_network), pairs(target_network)

        return torch_step
    adam = optax.adam(args.learning_rate)
    as_batch = lambda batch: module.Transitions(*(jnp.asarray(x) for x in batch))
    if name == "jax_linen":
        from flax.training.train_state import TrainState

        network, _ = linen_start()
        state = [module.Learner(TrainState.create(apply_fn=network.apply, params=params, tx=adam), params)]
        update = jax.jit(lambda learner, batch: module.update(learner, batch, args))
        dense = lambda p: [(np.asarray(p[f"Dense_{i}"]["kernel"]), np.asarray(p[f"Dense_{i}"]["bias"])) for i in range(3)]

        def linen_step(batch):
            state[0], info = update(state[0], as_batch(batch))
            return (
                {k: float(v) for k, v in info.items()},
                dense(state[0].q.params["params"]),
                dense(state[0].target_params["params"]),
            )

        return linen_step
    if name == "jax_nnx":
        from flax import nnx

        network = load_linen(name, module.QNetwork(OBS_DIM, HIDDEN, NUM_ACTIONS, rngs=nnx.Rngs(0)), params["params"])
        learner = module.Learner(module.TrainState(network, adam), nnx.clone(network))
        update = nnx.cached_partial(nnx.jit(lambda learner, batch: module.update(learner, batch, args)[1]), learner)
        pairs = lambda net: [(np.asarray(layer.kernel[...]), np.asarray(layer.bias[...])) for layer in net.layers]

        def nnx_step(batch):
            info = update(as_batch(batch))  # the learner moves in place
            return {k: float(v) for k, v in info.items()}, pairs(learner.q.params), pairs(learner.target_params)

        return nnx_step
    import equinox as eqx

    network = load_linen(name, module.QNetwork(OBS_DIM, HIDDEN, NUM_ACTIONS, jax.random.key(0)), params["params"])
    state = [module.Learner(module.TrainState.create(network, adam), jax.tree.map(jnp.copy, network))]
    update = eqx.filter_jit(lambda learner, batch: module.update(learner, batch, args))
    pairs = lambda net: [(np.asarray(layer.weight).T, np.asarray(layer.bias)) for layer in net.layers]

    def equinox_step(batch):
        state[0], info = update(state[0], as_batch(batch))
        return {k: float(v) for k, v in info.items()}, pairs(state[0].q.params), pairs(state[0].target_params)

    return equinox_step


# Linen's own steps by default beside eager torch's (about 2 s); the other ports' under the slow marker
@pytest.mark.parametrize("name", [n if n == "torch" else pytest.param(n, marks=pytest.mark.slow) for n in VARIANTS])
def test_from_linens_start_the_gradient_steps_and_the_targets_move_agree_with_linens(name):
    """Three gradient steps on the same batches: the same losses and Q networks as Linen's, to float rounding; the
    target unchanged after the first and third, and after the second (target_network_frequency 20 = 2 steps of
    train_frequency 10) exactly the Q network's parameters, in every framework (CleanRL's tau * param + (1 - tau) *
    target, tau 1)."""
    _, params = linen_start()
    reference, port = steps_of("jax_linen", params), steps_of(name, params)
    start = [(np.asarray(p["kernel"]), np.asarray(p["bias"])) for p in params["params"].values()]
    previous_target = start
    for k, batch in enumerate(batches(), start=1):
        (want_info, want_q, want_target), (info, q, target) = reference(batch), port(batch)
        for key in ("td_loss", "q_values"):
            assert info[key] == pytest.approx(want_info[key], rel=1e-5, abs=1e-6), key
        for (kernel, bias), (want_kernel, want_bias) in zip(q, want_q):
            np.testing.assert_allclose(kernel, want_kernel, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(bias, want_bias, rtol=1e-5, atol=1e-6)
        for got, expected in zip(target, q if k == 2 else previous_target):  # a copy, or untouched: exactly
            np.testing.assert_array_equal(got[0], expected[0])
            np.testing.assert_array_equal(got[1], expected[1])
        for got, expected in zip(target, want_target):
            np.testing.assert_allclose(got[0], expected[0], rtol=1e-5, atol=1e-6)
        assert not all(np.array_equal(a[0], b[0]) for a, b in zip(q, start))  # the Q network moved
        previous_target = target


def test_the_off_policy_report_reads_dqns_records_as_one_gradient_step_every_train_frequency_steps(tmp_path):
    """DQN's records have no --updates-per-step: their cell's update-to-data ratio is 1 / train_frequency, its gradient
    steps a second a tenth of its env steps', and its learn environment CartPole-v1, whose bar is 475."""
    from fixtures.script_args import parsed_args
    from report import offpolicy
    from report.records import load_runs

    for seed in (1, 2, 3):
        for variant, steady in (("jax_linen", 0.5), ("torch", 1.5)):
            argv = ["--seed", str(seed), "--hidden", "64,64", "--total-timesteps", "15000", "--steps-per-iteration", "500"]
            args = parsed_args(ROOT / f"dqn_{variant}.py", argv)
            n = 10
            record = {
                "schema_version": 2,
                "status": "ok",
                "algorithm": "dqn",
                "variant": variant,
                "env_id": args["env_id"],
                "hidden": [64, 64],
                "seed": seed,
                "args": args,
                "device": "cpu",
                "cpu": {"model": "test CPU"},
                "versions": {"python": "3.11"},
                "sync_timing": False,
                "env_steps": args["total_timesteps"],
                "setup_duration": 1.0,
                "iteration_durations": [5.0] + [steady] * (n - 1),
                "total_duration": 5.0 + steady * (n - 1),
                "compiles_after_first_iteration": 0,
                "episodic_return": [None] * n,
                "final_return": None,
                "peak_host_memory_mb": 500.0,
            }
            (tmp_path / "overall").mkdir(exist_ok=True)
            (tmp_path / "overall" / f"{variant}__CartPole-v1__s__seed{seed}.json").write_text(json.dumps(record))
    runs, failures = load_runs(tmp_path)
    assert (
        not failures
        and offpolicy.learn_envs(runs) == ("CartPole-v1", "FourRooms-misc")
        and offpolicy.target("CartPole-v1") == 475
    )
    rows = {r["variant"]: r for r in offpolicy.summary(runs, learning=False)["timing"]}
    assert rows["jax_linen"]["cell"] == "CartPole-v1, s (64x64), 1 env, UTD 0.1"
    assert rows["jax_linen"]["env_steps_per_second"] == pytest.approx(1000) and rows["torch"]["ratio"] == pytest.approx(3)
    assert rows["jax_linen"]["grad_steps_per_second"] == pytest.approx(100)


def test_the_dqn_presets_run_every_variant_at_cleanrls_network_in_whole_iterations():
    """dqn: every variant in every block of each cell (CartPole-v1 and FourRooms-misc, 1 env and 16), at CleanRL's
    120-84 network, each run whole iterations of whole groups of train_frequency steps; dqn-learn: CleanRL's run on
    both environments, 10 seeds a variant."""
    from collections import defaultdict

    from bench.plan import load as load_plan
    from bench.plan_runs import block_of
    from fixtures.script_args import parsed_args
    from test_resume import command

    timed = load_plan(["--preset", "dqn", "--out", "/nonexistent/out"])
    blocks = defaultdict(set)
    for run in timed.runs:
        blocks[block_of(run)].add(run.variant)
        args = parsed_args(ROOT / run.script, command(run))
        random_steps = -(-args["learning_starts"] // args["num_envs"])
        iterations = (args["total_timesteps"] - random_steps * args["num_envs"]) / (
            args["num_envs"] * args["steps_per_iteration"]
        )
        assert iterations == 11 and args["steps_per_iteration"] % args["train_frequency"] == 0, run.name
        assert args["hidden"] == "120,84" and run.name.endswith(f"__n{args['num_envs']:04d}__seed{run.seed}")
    assert len(blocks) == 2 * 2 * 10 and all(variants == set(VARIANTS) for variants in blocks.values())
    learn = load_plan(["--preset", "dqn-learn", "--out", "/nonexistent/out"]).runs
    assert len(learn) == 5 * 2 * 10 and {r.env for r in learn} == {"CartPole-v1", "FourRooms-misc"}
    for run in learn:
        args = parsed_args(ROOT / run.script, command(run))
        assert (args["total_timesteps"], args["learning_starts"], args["hidden"]) == (500000, 10000, "120,84")


@pytest.mark.parametrize("name", ["torch", "torch_compile"])
def test_the_ports_backend_refuses_the_gridworld_in_one_line(name, tmp_path, capsys, monkeypatch):
    """FourRooms-misc is in Gymnasium's stack (benchback/gridworld.py), not among the torch ports."""
    module = load(name)
    monkeypatch.chdir(tmp_path)
    argv = [*TINY, "--json-out", "run.json", "--env-id", "FourRooms-misc", "--env-backend", "torch"]
    assert main(module.Args, module.train, argv) == 2
    (err,) = capsys.readouterr().err.strip().splitlines()
    assert "--env-backend torch has CartPole-v1, Acrobot-v1, Pendulum-v1, not --env-id FourRooms-misc" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # three runs, one with a process per env (the gridworld's ports: tests/test_gridworld.py)
def test_torchs_dqn_on_the_numpy_gridworld_does_the_gymnax_runs_work(tmp_path, monkeypatch):
    """On Gymnasium's stack, in one process and a process per env: the env steps, gradient steps and network of the
    run on gymnax's FourRooms-misc, nothing compiled after iteration 0, and a record naming the stack."""
    module = load("torch")
    monkeypatch.chdir(tmp_path)
    records = {}
    for backend in ("gymnax", "gymnasium", "gymnasium-async"):
        argv = [*TINY, "--env-id", "FourRooms-misc", "--env-backend", backend, "--json-out", f"{backend}.json"]
        assert main(module.Args, module.train, argv) == 0
        records[backend] = json.loads((tmp_path / f"{backend}.json").read_text())
    for backend in ("gymnasium", "gymnasium-async"):
        record = records[backend]
        assert record["env_backend"] == backend and "gymnasium" in record["versions"]
        for key in ("env_steps", "grad_steps", "param_count", "random_steps"):
            assert record[key] == records["gymnax"][key], key
        assert record["compiles_after_first_iteration"] == 0


@pytest.mark.slow  # 175 runs' commands parsed
def test_the_scaling_preset_steps_the_same_envs_an_iteration_at_every_count_in_every_stack():
    """dqn-scaling: the gridworld at 1 to 256 envs, each iteration 2560 steps of the envs (so fewer gradient steps as
    envs are added, CleanRL's one every train_frequency steps of them all), Linen, torch and torch.compile, and the
    torch scripts on Gymnasium's stack in turn and a process per env, in every block; the record names the stack."""
    from collections import defaultdict

    from bench.plan import load as load_plan
    from bench.plan_runs import block_of
    from fixtures.script_args import parsed_args
    from test_resume import command

    runs = load_plan(["--preset", "dqn-scaling", "--out", "/nonexistent/out"]).runs
    blocks = defaultdict(set)
    for run in runs:
        blocks[block_of(run)].add(run.variant)
        args = parsed_args(ROOT / run.script, command(run))
        assert args["num_envs"] * args["steps_per_iteration"] == 2560 and args["steps_per_iteration"] % 10 == 0
        assert args.get("env_backend", "gymnax") == (run.variant.split("+")[1] if "+" in run.variant else "gymnax")
    stacks = {f"{s}+{b}" for s in ("torch", "torch_compile") for b in ("gymnasium", "gymnasium-async")}
    assert {int(name.split("__n")[1][:4]) for _, name in blocks} == {1, 4, 16, 64, 256}
    assert all(v == {"jax_linen", "torch", "torch_compile", *stacks} for v in blocks.values())
    assert len(blocks) == 5 * 5


def test_a_record_of_every_stack_the_scaling_preset_runs_counts_as_made_as_planned():
    """A DQN record names its stack from its own script's declared stacks, not PPO's: gymnasium-async, which only the
    off-policy torch scripts declare, once made every such run's record stale, so the sweep failed it as no result."""
    from bench.plan import load as load_plan
    from bench.run_records import other_settings
    from fixtures.script_args import parsed_args
    from test_resume import command

    runs = [r for r in load_plan(["--preset", "dqn-scaling", "--out", "/nonexistent/out"]).runs if "__n0004__" in r.name]
    assert {r.variant for r in runs} >= {"torch+gymnasium-async", "torch_compile+gymnasium-async"}
    for run in runs:
        args = parsed_args(ROOT / run.script, command(run))
        record = {"status": "ok", "variant": Path(run.script).stem.split("_", 1)[1], "args": args, "device": "cpu"}
        assert other_settings(record, run) == "", run.name


def test_a_dqn_learn_set_compares_the_variants_on_each_of_its_environments(tmp_path, few_resamples):
    """dqn-learn's report holds a learning table, probability of improvement over Linen included, for CartPole-v1 AND
    the gridworld: torch made to learn the gridworld worse is told so there, and like Linen on CartPole-v1."""
    from bench.plan import load as load_plan
    from report import offpolicy
    from report.records import load_runs
    from test_sac_sweep import record_of

    made = load_plan(["--preset", "dqn-learn", "--variants", "jax_linen,torch", "--out", "/nonexistent/out"])
    for run in made.runs:
        worse = run.variant == "torch" and run.env == "FourRooms-misc"
        final = (0.3 if worse else 1.0) if run.env == "FourRooms-misc" else 480.0 + run.seed
        record = record_of(run, final_return=final)
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    runs, failures = load_runs(tmp_path)
    assert not failures
    summary = offpolicy.summary(runs)
    sections = {s["env"]: {r["variant"]: r for r in s["rows"]} for s in summary["learning"]}
    assert list(sections) == ["CartPole-v1", "FourRooms-misc"]
    assert sections["CartPole-v1"]["torch"]["verdict"] == "learns like the reference"
    assert sections["FourRooms-misc"]["torch"]["verdict"] == "learns worse than the reference"
    text = offpolicy.markdown(summary)
    assert "Learning: CartPole-v1" in text and "Learning: FourRooms-misc" in text
