"""sac_jax_nnx.py and sac_jax_equinox.py: sac_jax_linen.py in Flax NNX and in Equinox. Each runs
from its command line and writes a record of the same work and parameter count as Linen's, compiles nothing after
iteration 0, refuses bad input in one line, compiles in `train`; its layers start from Linen's distribution; and from
Linen's initial parameters, on the same batch and noise, its first critic and actor (and alpha) updates agree with
Linen's to float rounding. Its networks built from the same key as Linen's need not hold the same numbers (each
framework splits keys its own way): the agreement test loads Linen's."""

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
from test_sac import SAC, TINY

JAX = {"jax_nnx": "sac_jax_nnx.py", "jax_equinox": "sac_jax_equinox.py"}
SCRIPTS = {**SAC, **JAX}


def load(name: str):
    """A SAC script imported as a module, once per test process (as test_sac loads them)."""
    return load_script(f"sac_{name}", SCRIPTS[name])


def run(name: str, *flags: str, cwd) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / SCRIPTS[name]), *flags]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


def tooling(script: str) -> dict:
    tree = ast.parse((ROOT / script).read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TOOLING")
    return ast.literal_eval(node.value)


def tiny_run(directory, name: str):
    """The script's process on TINY, and its record (None without one): run beside the other tests."""
    proc = run(name, *TINY, "--json-out", "run.json", cwd=directory)
    return proc, json.loads((directory / "run.json").read_text()) if (directory / "run.json").exists() else None


@pytest.mark.parametrize("name", ["jax_nnx", pytest.param("jax_equinox", marks=pytest.mark.slow)])  # 12 s each
@in_background(tiny_run)
def test_a_run_from_the_command_line_writes_a_record_like_linens(name, background):
    proc, record = background
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (record["variant"], record["algorithm"], record["status"]) == (name, "sac", "ok")
    assert record["random_steps"] == 100 and record["env_steps"] == 500 and record["grad_steps"] == 5 * 40 * 2
    # sac_jax_linen.py's count for TINY (test_sac): actor, two Q networks, log alpha
    assert record["param_count"] == (128 + 1056 + 66) + 2 * (160 + 1056 + 33) + 1
    assert record["compiles_after_first_iteration"] == 0
    # Pendulum's episodes end at each env's 200th step, in iteration 3: none in the last, the final return's window
    assert record["episodes"] == [0, 0, 0, 2, 0] and record["final_window"] == 1 and record["final_return"] is None
    assert record["episodic_return"][3] is not None and record["random_duration"] > 0


@pytest.mark.parametrize("name", JAX)
def test_bad_input_is_one_line_and_exit_2(name, tmp_path, capsys, monkeypatch):
    module = load(name)
    monkeypatch.chdir(tmp_path)
    assert main(module.Args, module.train, [*TINY, "--json-out", str(tmp_path / "run.json"), "--tau", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "name, expected",
    [
        ("jax_nnx", {"framework": "jax", "compiles": "nnx.jit", "order": 2, "color": "tab:orange"}),
        ("jax_equinox", {"framework": "jax", "compiles": "eqx.filter_jit", "order": 3, "color": "tab:red"}),
    ],
)
def test_the_tooling_line_and_its_compile_call_in_train(name, expected):
    assert tooling(JAX[name]) == expected
    assert expected["compiles"] in calls_in_train((ROOT / JAX[name]).read_text())


def build(name: str, obs_dim: int, action_dim: int, hidden, low, high, seed: int = 0):
    """The script's Actor and Critic, from its own constructors."""
    import jax

    module = load(name)
    scale, bias = (high - low) / 2, (high + low) / 2
    actor_key, critic_key = jax.random.split(jax.random.key(seed))
    if name == "jax_nnx":
        from flax import nnx

        actor = module.Actor(obs_dim, hidden, scale, bias, rngs=nnx.Rngs(actor_key))
        return actor, module.Critic(obs_dim, action_dim, hidden, rngs=nnx.Rngs(critic_key))
    q1_key, q2_key = jax.random.split(critic_key)
    q = lambda key: module.SoftQNetwork(obs_dim + action_dim, hidden, key)
    return module.Actor(obs_dim, hidden, scale, bias, actor_key), module.Critic(q(q1_key), q(q2_key))


def layers(name: str, network) -> list:
    """(weight as Linen's kernel (in, out), bias) of each layer of an Actor or a SoftQNetwork, Linen's Dense_0, ... order."""
    if name == "jax_nnx":
        return [(np.asarray(layer.kernel[...]), np.asarray(layer.bias[...])) for layer in network.layers]
    return [(np.asarray(layer.weight).T, np.asarray(layer.bias)) for layer in network.layers]


def load_linen(name: str, network, params: dict):
    """The network with Linen's parameters (Dense_0, Dense_1, ... in order): in place for NNX, a new one for Equinox."""
    import jax.numpy as jnp

    dense = [params[f"Dense_{i}"] for i in range(len(params))]
    assert len(dense) == len(network.layers)
    if name == "jax_nnx":
        for layer, p in zip(network.layers, dense):
            layer.kernel[...], layer.bias[...] = jnp.asarray(p["kernel"]), jnp.asarray(p["bias"])
        return network
    import equinox as eqx

    weights = lambda net: [x for layer in net.layers for x in (layer.weight, layer.bias)]
    return eqx.tree_at(weights, network, [jnp.asarray(x) for p in dense for x in (p["kernel"].T, p["bias"])])


@pytest.mark.parametrize("name", JAX)
def test_the_layers_start_uniform_in_the_inverse_square_root_of_fan_in(name):
    """Linen's (and torch's) distribution: every weight and bias within +-1/sqrt(fan_in), with a uniform's spread."""
    low, high = np.float32([-2.0]), np.float32([2.0])
    actor, critic = build(name, 3, 1, (256, 256), low, high)
    for network in (actor, critic.q1, critic.q2):
        for kernel, bias in layers(name, network):
            bound = 1 / np.sqrt(kernel.shape[0])
            for x in (kernel, bias):
                assert np.abs(x).max() <= bound
            if kernel.size > 1000:
                assert abs(kernel.std() / (bound / np.sqrt(3)) - 1) < 0.05 and abs(kernel.mean()) < 0.05 * bound


# NNX's by default, Equinox's under the slow marker (about 15 s), as DQN's and TD3's keep one by default
@pytest.mark.parametrize("name", [n if n == "jax_nnx" else pytest.param(n, marks=pytest.mark.slow) for n in JAX])
def test_from_linens_start_one_critic_and_one_actor_update_agree(name):
    """The script's networks take Linen's initial parameters; one critic update and one actor (and alpha) update on the
    same batch and noise leave the same losses and parameters as sac_jax_linen.py's, to float rounding."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax.training.train_state import TrainState

    jx, other = load("jax_linen"), load(name)
    args = jx.Args(hidden="64,64")
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
        TrainState.create(apply_fn=actor.apply, params=actor_params, tx=optax.adam(args.policy_lr)),
        TrainState.create(apply_fn=critic.apply, params=critic_params, tx=optax.adam(args.q_lr)),
        critic_params,
        TrainState.create(apply_fn=None, params={"log_alpha": jnp.float32(0)}, tx=optax.adam(args.q_lr)),
    )

    their_actor, their_critic = build(name, obs_dim, action_dim, hidden, low, high)
    linen_actor = [(np.asarray(p["kernel"]), np.asarray(p["bias"])) for p in actor_params["params"].values()]
    assert not np.allclose(layers(name, their_actor)[0][0], linen_actor[0][0])  # built, they need not match Linen's
    their_actor = load_linen(name, their_actor, actor_params["params"])
    if name == "jax_nnx":
        from flax import nnx

        for q in ("q1", "q2"):
            load_linen(name, getattr(their_critic, q), critic_params["params"][q])
        state = lambda module, tx: other.TrainState(module, tx)
        log_alpha = nnx.Dict(log_alpha=nnx.Param(jnp.float32(0)))
        target = nnx.clone(their_critic)
    else:
        q1, q2 = (load_linen(name, getattr(their_critic, q), critic_params["params"][q]) for q in ("q1", "q2"))
        their_critic = other.Critic(q1, q2)
        state = other.TrainState.create
        log_alpha, target = {"log_alpha": jnp.float32(0)}, jax.tree.map(jnp.copy, their_critic)
    theirs = other.Learner(
        state(their_actor, optax.adam(args.policy_lr)),
        state(their_critic, optax.adam(args.q_lr)),
        target,
        state(log_alpha, optax.adam(args.q_lr)),
    )

    batch = jx.Transitions(*map(jnp.asarray, (obs, action, reward, next_obs, terminated)))
    learner, info = jx.update_critic(learner, batch, jnp.asarray(noise), args)
    theirs, their_info = other.update_critic(theirs, batch, jnp.asarray(noise), args)
    learner, actor_info = jx.update_actor(learner, batch.obs, actor_noise, alpha_noise, -2.0, args)
    theirs, their_actor_info = other.update_actor(theirs, batch.obs, actor_noise, alpha_noise, -2.0, args)

    close = lambda a, b: np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    for key in ("qf_loss", "qf1_values", "qf2_values", "qf1_loss", "qf2_loss"):
        close(info[key], their_info[key])
    for key in ("actor_loss", "alpha", "alpha_loss"):
        close(actor_info[key], their_actor_info[key])
    for q in ("q1", "q2"):
        linen_q = [(p["kernel"], p["bias"]) for p in learner.critic.params["params"][q].values()]
        for (kernel, bias), (their_kernel, their_bias) in zip(linen_q, layers(name, getattr(theirs.critic.params, q))):
            close(kernel, their_kernel)
            close(bias, their_bias)
    linen_actor = [(p["kernel"], p["bias"]) for p in learner.actor.params["params"].values()]
    for (kernel, bias), (their_kernel, their_bias) in zip(linen_actor, layers(name, theirs.actor.params)):
        close(kernel, their_kernel)
        close(bias, their_bias)
    close(learner.log_alpha.params["log_alpha"], theirs.log_alpha.params["log_alpha"][...])
    assert not np.allclose(np.asarray(learner.log_alpha.params["log_alpha"]), 0)  # the updates moved something
    assert int(theirs.critic.step[...] if name == "jax_nnx" else theirs.critic.step) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", JAX)
def test_each_script_learns_pendulum(name, tmp_path):
    """As test_sac's check of Linen's: CleanRL's SAC reaches about -150 to -250 on Pendulum-v1 by 10-15k steps."""
    flags = ["--no-cuda", "--no-tensorboard", "--quiet", "--total-timesteps", "15000", "--learning-starts", "1000"]
    proc = run(name, *flags, "--json-out", "run.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads((tmp_path / "run.json").read_text())["final_return"] > -300


def test_nnx_updates_reach_the_learner_through_the_cached_compiled_call():
    """train's iteration returns no learner: nnx.cached_partial(nnx.jit(...)) must leave every update in the learner's
    own variables, the targets' included (held as an nnx.State in a NamedTuple, they would silently stay at their start)."""
    import jax
    import jax.numpy as jnp
    import optax
    from flax import nnx

    m = load("jax_nnx")
    args = m.Args(hidden="16,16", policy_frequency=1)
    critic = m.Critic(3, 1, (16, 16), rngs=nnx.Rngs(1))
    learner = m.Learner(
        m.TrainState(m.Actor(3, (16, 16), (2.0,), (0.0,), rngs=nnx.Rngs(0)), optax.adam(1e-3)),
        m.TrainState(critic, optax.adam(1e-3)),
        nnx.clone(critic),
        m.TrainState(nnx.Dict(log_alpha=nnx.Param(jnp.float32(0))), optax.adam(1e-3)),
    )
    pure = lambda module: jax.tree.map(np.asarray, nnx.to_pure_dict(nnx.state(module)))
    target, actor, log_alpha = pure(learner.target_params), pure(learner.actor.params), pure(learner.log_alpha.params)
    rng = np.random.default_rng(0)
    shapes = ((32, 3), (32, 1), (32,), (32, 3), (32,))
    batch = m.Transitions(*(jnp.asarray(rng.normal(size=s), jnp.float32) for s in shapes))._replace(terminated=jnp.zeros(32))
    step = nnx.cached_partial(nnx.jit(lambda learner, key: m.update(learner, batch, key, -1.0, args)[1]), learner)
    step(jax.random.key(0))
    assert int(learner.critic.step[...]) == 1
    expected = jax.tree.map(lambda t, c: t + args.tau * (c - t), target, pure(learner.critic.params))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), pure(learner.target_params), expected)
    for before, module in (
        (target, learner.target_params),
        (actor, learner.actor.params),
        (log_alpha, learner.log_alpha.params),
    ):
        assert not all(jax.tree.leaves(jax.tree.map(np.array_equal, before, pure(module))))  # each moved
