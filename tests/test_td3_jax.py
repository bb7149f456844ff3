"""td3_jax_linen.py, td3_jax_nnx.py and td3_jax_equinox.py: TD3 in Flax Linen, Flax NNX and Equinox. Each refuses bad
input in one line; its layers start from torch's distribution; its actor and its targets move every policy_frequency
gradient steps only, the targets tau toward the networks (NNX's in place, through the compiled call train makes); from
Linen's parameters, on the same batch and noise, NNX's and Equinox's first critic and actor updates (and the targets'
move) agree with Linen's to float rounding; and each runs from its command line, writing a record that compiles nothing
after iteration 0. Learning Pendulum-v1 is marked slow."""

import ast
import json
import subprocess
import sys

import numpy as np
import pytest

from benchback.cli import main
from conftest import ROOT, in_background
from conftest import load as load_script
from test_layout import calls_in_train
from test_sac import TINY
from test_sac_jax import layers, load_linen

TD3 = {"jax_linen": "td3_jax_linen.py", "jax_nnx": "td3_jax_nnx.py", "jax_equinox": "td3_jax_equinox.py"}
# NNX's by default (its targets move in place, inside nnx.cond), Linen's and Equinox's under the slow marker: 7 s each
ONE_BY_DEFAULT = [n if n == "jax_nnx" else pytest.param(n, marks=pytest.mark.slow) for n in TD3]
JAX = ["jax_nnx", "jax_equinox"]  # the ports of Linen's, the reference


def load(name: str):
    """A TD3 script imported as a module, once per test process."""
    return load_script(f"td3_{name}", TD3[name])


def run(name: str, *flags: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / TD3[name]), *flags]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def tiny_run(directory, name: str):
    """The script's process on TINY, and its record (None without one): run beside the other tests."""
    proc = run(name, *TINY, "--json-out", "run.json", cwd=directory)
    return proc, json.loads((directory / "run.json").read_text()) if (directory / "run.json").exists() else None


# Linen's by default, NNX's and Equinox's under the slow marker (about 12 s each on 2 cores)
@pytest.mark.parametrize("name", ["jax_linen", *(pytest.param(n, marks=pytest.mark.slow) for n in ("jax_nnx", "jax_equinox"))])
@in_background(tiny_run)
def test_a_run_from_the_command_line_writes_a_record_of_its_work(name, background):
    proc, record = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (record["variant"], record["algorithm"], record["status"]) == (name, "td3", "ok")
    assert record["random_steps"] == 100 and record["env_steps"] == 500 and record["grad_steps"] == 5 * 40 * 2
    # actor: 3*32+32 + 32*32+32 + 32+1; each Q network: 4*32+32 + 32*32+32 + 32+1 (the targets are not trained)
    assert record["param_count"] == (128 + 1056 + 33) + 2 * (160 + 1056 + 33)
    assert record["compiles_after_first_iteration"] == 0
    # Pendulum's episodes end at each env's 200th step, in iteration 3: none in the last, the final return's window
    assert record["episodes"] == [0, 0, 0, 2, 0] and record["final_window"] == 1 and record["final_return"] is None
    assert record["episodic_return"][3] is not None and record["random_duration"] > 0


BAD = [
    ["--noise-clip", "-1"],
    ["--policy-noise", "nan"],
    ["--exploration-noise", "-0.1"],
    ["--learning-rate", "0"],
    ["--tau", "2"],
    ["--env-id", "CartPole-v1"],
]


@pytest.mark.parametrize("name", TD3)
@pytest.mark.parametrize("bad", BAD, ids=lambda flags: " ".join(flags))
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(name, bad, tmp_path, capsys, monkeypatch):
    module = load(name)
    monkeypatch.chdir(tmp_path)
    assert main(module.Args, module.train, [*TINY, "--json-out", str(tmp_path / "run.json"), *bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert "TD3" in err[0] if "CartPole-v1" in bad else bad[0] in err[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", TD3)
@pytest.mark.parametrize("flag", [["--policy-lr", "1e-3"], ["--autotune"], ["--target-network-frequency", "2"]])
def test_sacs_flags_are_not_td3s(name, flag, capsys):
    module = load(name)
    with pytest.raises(SystemExit) as raised:
        main(module.Args, module.train, [*TINY, *flag])
    err = capsys.readouterr().err.strip().splitlines()
    assert raised.value.code == 2 and len(err) == 1 and err[0].startswith("error: "), err


def tooling(script: str) -> dict:
    tree = ast.parse((ROOT / script).read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TOOLING")
    return ast.literal_eval(node.value)


@pytest.mark.parametrize("name", TD3)
def test_the_tooling_line_is_the_sac_scripts_and_its_compile_call_stands_in_train(name):
    expected = tooling(f"sac_{name}.py")
    assert tooling(TD3[name]) == expected
    assert expected["compiles"] in calls_in_train((ROOT / TD3[name]).read_text())


def build(name: str, obs_dim: int, action_dim: int, hidden, low, high, seed: int = 0):
    """The script's Actor and Critic, from its own constructors; Linen's as (module, its parameters) pairs."""
    import jax

    module = load(name)
    scale, bias = tuple((high - low) / 2), tuple((high + low) / 2)
    actor_key, critic_key = jax.random.split(jax.random.key(seed))
    if name == "jax_linen":
        obs, action = np.zeros((1, obs_dim), np.float32), np.zeros((1, action_dim), np.float32)
        actor, critic = module.Actor(hidden, scale, bias), module.Critic(hidden)
        return (actor, actor.init(actor_key, obs)), (critic, critic.init(critic_key, obs, action))
    if name == "jax_nnx":
        from flax import nnx

        actor = module.Actor(obs_dim, hidden, scale, bias, rngs=nnx.Rngs(actor_key))
        return actor, module.Critic(obs_dim, action_dim, hidden, rngs=nnx.Rngs(critic_key))
    q1_key, q2_key = jax.random.split(critic_key)
    q = lambda key: module.QNetwork(obs_dim + action_dim, hidden, key)
    return module.Actor(obs_dim, hidden, scale, bias, actor_key), module.Critic(q(q1_key), q(q2_key))


def linen_layers(params: dict) -> list:
    """(kernel, bias) of each of a Linen network's Dense layers, in order."""
    return [(np.asarray(params[f"Dense_{i}"]["kernel"]), np.asarray(params[f"Dense_{i}"]["bias"])) for i in range(len(params))]


def networks(name: str, actor, critic) -> list:
    """The actor's layers and each Q network's, as (kernel as Linen's (in, out), bias) pairs."""
    if name == "jax_linen":
        params, critic_params = actor[1]["params"], critic[1]["params"]
        return [linen_layers(p) for p in (params, critic_params["q1"], critic_params["q2"])]
    return [layers(name, network) for network in (actor, critic.q1, critic.q2)]


@pytest.mark.parametrize("name", ONE_BY_DEFAULT)
def test_the_layers_start_uniform_in_the_inverse_square_root_of_fan_in(name):
    """torch's nn.Linear default, CleanRL's: every weight and bias within +-1/sqrt(fan_in), with a uniform's spread."""
    low, high = np.float32([-2.0]), np.float32([2.0])
    for network in networks(name, *build(name, 3, 1, (256, 256), low, high)):
        assert [kernel.shape for kernel, _ in network][1:] == [(256, 256), (256, 1)]
        for kernel, bias in network:
            bound = 1 / np.sqrt(kernel.shape[0])
            for x in (kernel, bias):
                assert np.abs(x).max() <= bound
            if kernel.size > 1000:
                assert abs(kernel.std() / (bound / np.sqrt(3)) - 1) < 0.05 and abs(kernel.mean()) < 0.05 * bound


def copy(name: str, network):
    """A copy of a network (Linen's: of its parameters), as train makes the targets."""
    import jax
    import jax.numpy as jnp

    if name == "jax_nnx":
        from flax import nnx

        return nnx.clone(network)
    return jax.tree.map(jnp.copy, network[1] if name == "jax_linen" else network)


def make_learner(name: str, actor, critic, actor_target, target_params, args):
    """The script's Learner: its networks, each with a fresh Adam, and their targets (Linen's networks as pairs)."""
    import optax

    module, tx = load(name), optax.adam(args.learning_rate)
    if name == "jax_linen":
        from flax.training.train_state import TrainState

        state = lambda network: TrainState.create(apply_fn=network[0].apply, params=network[1], tx=tx)
    elif name == "jax_nnx":
        state = lambda network: module.TrainState(network, tx)
    else:
        state = lambda network: module.TrainState.create(network, tx)
    return module.Learner(state(actor), state(critic), actor_target, target_params)


def parameters(name: str, network):
    """A network's parameters (Linen's: the parameters themselves) as a pytree of NumPy arrays, copied."""
    import jax

    if name == "jax_nnx":
        from flax import nnx

        network = nnx.to_pure_dict(nnx.state(network, nnx.Param))
    elif name == "jax_equinox":
        import equinox as eqx

        network = eqx.filter(network, eqx.is_array)
    return jax.tree.map(np.array, network)


def compiled_update(name: str, learner, batch, low, high, args):
    """update(learner, batch, key) compiled as train compiles it: a function of the key, returning (learner, info). NNX's
    returns its learner in place, through nnx.cached_partial: every move must reach the learner's own variables."""
    import jax

    module = load(name)
    update = lambda learner, key: module.update(learner, batch, key, low, high, args)
    if name == "jax_nnx":
        from flax import nnx

        step = nnx.cached_partial(nnx.jit(lambda learner, key: update(learner, key)[1]), learner)
        return lambda key: (learner, step(key))
    if name == "jax_equinox":
        import equinox as eqx

        step = eqx.filter_jit(update)
    else:
        step = jax.jit(update)
    state = [learner]

    def call(key):
        state[0], info = step(state[0], key)
        return state[0], info

    return call


@pytest.mark.parametrize("name", ONE_BY_DEFAULT)
def test_the_actor_and_its_targets_move_every_policy_frequency_gradient_steps(name):
    """Gradient step 0 moves the critic, the actor and the three targets, each tau toward its network's new parameters;
    step 1 (policy_frequency 2) moves the critic alone: TD3's delayed actor and target updates."""
    import jax
    import jax.numpy as jnp

    module = load(name)
    args = module.Args(hidden="16,16")
    low, high = np.float32([-2.0]), np.float32([2.0])
    actor, critic = build(name, 3, 1, (16, 16), low, high)
    learner = make_learner(name, actor, critic, copy(name, actor), copy(name, critic), args)
    rng = np.random.default_rng(0)
    shapes = ((32, 3), (32, 1), (32,), (32, 3), (32,))
    batch = module.Transitions(*(jnp.asarray(rng.normal(size=s), jnp.float32) for s in shapes))
    batch = batch._replace(terminated=jnp.zeros(32))
    step = compiled_update(name, learner, batch, low, high, args)

    def snapshot(learner):
        nets = (learner.actor.params, learner.critic.params, learner.actor_target, learner.target_params)
        return [parameters(name, net) for net in nets]

    moved = lambda before, after: not all(jax.tree.leaves(jax.tree.map(np.array_equal, before, after)))
    start = snapshot(learner)
    learner, info = step(jax.random.key(0))
    first = snapshot(learner)
    assert float(info["actor_updated"]) == 1 and float(info["actor_loss"]) != 0
    assert all(moved(before, after) for before, after in zip(start, first))
    for target, network in ((2, 0), (3, 1)):  # the targets, tau toward the networks' new parameters
        expected = jax.tree.map(lambda t, p: t + args.tau * (p - t), start[target], first[network])
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), first[target], expected)

    learner, info = step(jax.random.key(1))
    second = snapshot(learner)
    assert float(info["actor_updated"]) == 0 and float(info["actor_loss"]) == 0
    assert moved(first[1], second[1])  # the critic
    for i in (0, 2, 3):  # the actor, the targets
        jax.tree.map(np.testing.assert_array_equal, second[i], first[i])
    assert int(learner.critic.step[...] if name == "jax_nnx" else learner.critic.step) == 2


# Equinox's with -m slow (as SAC's): NNX's stays by default
@pytest.mark.parametrize("name", ["jax_nnx", pytest.param("jax_equinox", marks=pytest.mark.slow)])
def test_from_linens_start_one_critic_and_one_actor_update_agree(name):
    """The script's networks and targets take Linen's parameters; one critic update and one actor update (with the
    targets' move) on the same batch and noise leave the same losses and parameters as td3_jax_linen.py's, to float
    rounding. The targets differ from the networks, as after some steps, and the noise and the target actor are large
    enough that both clips of target policy smoothing act: to noise_clip, and to the bounds."""
    import jax
    import jax.numpy as jnp

    jx, other = load("jax_linen"), load(name)
    args = jx.Args(hidden="64,64")
    obs_dim, action_dim, hidden, n = 3, 2, (64, 64), 256
    low, high = np.float32([-2.0, -1.0]), np.float32([2.0, 0.5])
    rng = np.random.default_rng(3)
    obs, next_obs = rng.normal(size=(2, n, obs_dim)).astype(np.float32)
    action = rng.uniform(low, high, size=(n, action_dim)).astype(np.float32)
    reward, terminated = rng.normal(size=n).astype(np.float32), (rng.uniform(size=n) < 0.1).astype(np.float32)
    noise = 3 * rng.normal(size=(n, action_dim)).astype(np.float32)
    actor, critic = build("jax_linen", obs_dim, action_dim, hidden, low, high, seed=0)
    (_, actor_target), (_, target_params) = build("jax_linen", obs_dim, action_dim, hidden, low, high, seed=1)
    actor_target = jax.tree.map(lambda x: 2 * x, actor_target)  # its tanh nearer +-1: smoothed actions cross the bounds
    smoothing = np.clip(noise * args.policy_noise, -args.noise_clip, args.noise_clip) * (high - low) / 2
    smoothed = np.asarray(actor[0].apply(actor_target, next_obs)) + smoothing
    assert 0.2 < np.mean(np.abs(noise * args.policy_noise) > args.noise_clip) < 0.8
    assert 0.1 < np.mean((smoothed < low) | (smoothed > high)) < 0.9
    learner = make_learner("jax_linen", actor, critic, actor_target, target_params, args)

    def from_linen(actor_params, critic_params):
        """The script's Actor and Critic holding these Linen parameters."""
        their_actor, their_critic = build(name, obs_dim, action_dim, hidden, low, high)
        their_actor = load_linen(name, their_actor, actor_params["params"])
        q1, q2 = (load_linen(name, getattr(their_critic, q), critic_params["params"][q]) for q in ("q1", "q2"))
        return their_actor, their_critic if name == "jax_nnx" else other.Critic(q1, q2)  # NNX's: loaded in place

    theirs = make_learner(name, *from_linen(actor[1], critic[1]), *from_linen(actor_target, target_params), args)

    batch = jx.Transitions(*map(jnp.asarray, (obs, action, reward, next_obs, terminated)))
    learner, info = jx.update_critic(learner, batch, jnp.asarray(noise), low, high, args)
    theirs, their_info = other.update_critic(theirs, batch, jnp.asarray(noise), low, high, args)
    learner, loss = jx.update_actor(learner, batch.obs, args)
    theirs, their_loss = other.update_actor(theirs, batch.obs, args)

    close = lambda a, b: np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    for key in ("qf_loss", "qf1_values", "qf2_values", "qf1_loss", "qf2_loss"):
        close(info[key], their_info[key])
    close(loss, their_loss)
    linen_critic, linen_targets = learner.critic.params["params"], learner.target_params["params"]
    pairs = [
        (learner.actor.params["params"], theirs.actor.params),
        (learner.actor_target["params"], theirs.actor_target),
        *((linen_critic[q], getattr(theirs.critic.params, q)) for q in ("q1", "q2")),
        *((linen_targets[q], getattr(theirs.target_params, q)) for q in ("q1", "q2")),
    ]
    for linen_params, network in pairs:
        for (kernel, bias), (their_kernel, their_bias) in zip(linen_layers(linen_params), layers(name, network)):
            close(kernel, their_kernel)
            close(bias, their_bias)
    start = np.asarray(actor_target["params"]["Dense_0"]["kernel"])
    assert not np.allclose(np.asarray(learner.actor_target["params"]["Dense_0"]["kernel"]), start)  # the targets moved
    assert int(theirs.critic.step[...] if name == "jax_nnx" else theirs.critic.step) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", TD3)
def test_each_script_learns_pendulum(name, tmp_path):
    """CleanRL's TD3 reaches about -150 to -250 on Pendulum-v1 within 15k steps; random actions, about -1200."""
    flags = ["--no-cuda", "--no-tensorboard", "--quiet", "--total-timesteps", "15000", "--learning-starts", "1000"]
    proc = run(name, *flags, "--hidden", "64,64", "--json-out", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "run.json").read_text())["final_return"] > -400
