"""What ppo_jax_nnx.py, ppo_jax_equinox.py and ppo_linen_nojit.py must prove beyond the shared contract.

- A jit variant compiles its iteration into one program, once: NNX included, with and without
  nnx.cached_partial (state that changes shape or dtype between calls would compile it again), and
  Equinox's eqx.filter_jit.
- "No jit" means eager execution, not recompilation: no program of the script's own is compiled,
  nothing is compiled after iteration 0, and the arithmetic is exactly Linen's.
- The NNX and Equinox networks are Linen's network: same layers, same initialization scheme, same outputs;
  and started from Linen's initial parameters, their training runs are Linen's run.
"""

import collections
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from conftest import JIT_VARIANTS, load, needs
from studies.same_start import start_from_linen, with_layers

# Short enough for eager execution (6 iterations of 32 envs x 32 steps, 16 gradient steps each),
# with a learning rate high enough that CartPole returns clearly rise within it.
RISE = dict(
    num_envs=32,
    num_steps=32,
    num_minibatches=4,
    update_epochs=4,
    learning_rate=2.5e-3,
    total_timesteps=6 * 32 * 32,
    cuda=False,
    tensorboard=False,
    quiet=True,
)


class CompiledPrograms:
    """Counts the XLA programs compiled while open, by name: 'jit(iteration)', 'jit(add)'..."""

    def __init__(self):
        self.names = collections.Counter()

    def _listen(self, event, duration, **kwargs):
        if event == "/jax/core/compile/backend_compile_duration":
            self.names[kwargs.get("fun_name")] += 1

    def __enter__(self):
        jax.monitoring.register_event_duration_secs_listener(self._listen)
        return self

    def __exit__(self, *exc):
        jax.monitoring.unregister_event_duration_listener(self._listen)


@functools.cache
def rise_run(variant: str, **flags):
    """One RISE run per variant and flags, shared by the tests below: (record, compiled programs)."""
    module = load(variant)
    with CompiledPrograms() as programs:
        record = module.train(module.Args(**{**RISE, **flags}))
    return record, programs.names


# With -m slow (a run each, 22 s on 2 cores): by default every script's record says 0 compiles after iteration 0
# (test_contract.py); this one names the program XLA compiled.
@pytest.mark.slow
@pytest.mark.parametrize("variant", JIT_VARIANTS)
def test_jit_variant_compiles_its_iteration_once(variant):
    record, names = rise_run(variant)
    assert names["jit(iteration)"] == 1, names  # compiled on iteration 0, reused by the 5 others
    assert names["jit(rollout_and_batch)"] == names["jit(updated)"] == 0
    assert record["compiles_after_first_iteration"] == 0


@pytest.mark.slow  # a study mode of NNX's: 8 s on 2 cores
@needs("jax_nnx")
def test_nnx_without_cached_partial_compiles_once_and_runs_the_same():
    # --sync-timing too: its two programs, the rollout with its batch and the update, must not retrace either.
    record, names = rise_run("jax_nnx", cached_partial=False, sync_timing=True)
    assert record["args"]["cached_partial"] is False and rise_run("jax_nnx")[0]["args"]["cached_partial"] is True
    assert names["jit(rollout_and_batch)"] == names["jit(updated)"] == 1 and names["jit(iteration)"] == 0, names
    assert record["compiles_after_first_iteration"] == 0
    np.testing.assert_allclose(record["episodic_return"], rise_run("jax_nnx")[0]["episodic_return"], rtol=1e-5)


@needs("linen_nojit")
@pytest.mark.slow  # eager: its learning follows from the test below (the jitted script's arithmetic exactly)
def test_short_run_improves():
    """The eager script learns: a full default run is left to benchmark.sh (see conftest.py)."""
    record, _ = rise_run("linen_nojit")
    returns = record["episodic_return"]
    # About 18 on iteration 0 (only episodes shorter than 32 steps can end in it); a policy that
    # stays random levels off near 22, so twice the first iteration's return takes learning.
    assert None not in returns and np.mean(returns[-2:]) >= 2 * returns[0], returns
    assert record["compiles_after_first_iteration"] == 0


# Two iterations of 4 minibatch steps each, not RISE's six of 16: enough to compare (the second rollout follows
# from an update), at a fraction of an eager run's cost.
SHORT_RISE = dict(total_timesteps=2 * 32 * 32, update_epochs=2, num_minibatches=2)


@pytest.mark.slow  # about 50 s on 2 cores: every op of two iterations dispatched from Python, traced
@needs("linen_nojit")
def test_nojit_runs_eagerly_not_compiled():
    _, names = rise_run("linen_nojit", **SHORT_RISE)
    ours = {
        "iteration",  # train's, called without jit
        "make_batch",
        "rollout",
        "env_step",
        "compute_gae",
        "backward",
        "update",
        "epoch",
        "minibatch_step",
        "loss_fn",
        "ppo_loss",
        "python_scan",
        "scan",
        "while",
    }
    compiled_ours = [n for n in names if n.removeprefix("jit(").removesuffix(")") in ours]
    assert not compiled_ours, compiled_ours
    assert names["jit(step)"] == 1  # gymnax's own jax.jit on env.step, compiled once, as shipped


@pytest.mark.slow  # about 45 s on 2 cores, most of it each op's first dispatch without jit
@needs("linen_nojit", "jax_linen")
def test_nojit_is_linen_arithmetic_without_jit():
    """Same seed, same config: the eager script takes the jitted one's trajectory exactly."""
    eager, _ = rise_run("linen_nojit", **SHORT_RISE)
    jitted, _ = rise_run("jax_linen", **SHORT_RISE)
    np.testing.assert_allclose(eager["episodic_return"], jitted["episodic_return"], rtol=1e-5)


def orthogonal_gain(kernel):
    """g such that the (in, out) kernel has orthonormal rows or columns scaled by g; asserts one exists."""
    k = np.asarray(kernel, np.float64)
    gram = k.T @ k if k.shape[0] >= k.shape[1] else k @ k.T
    gain = np.sqrt(gram[0, 0])
    np.testing.assert_allclose(gram, gain**2 * np.eye(len(gram)), atol=1e-5)
    return gain


def build_agent(variant: str, obs_dim: int, hidden, num_actions: int):
    module = load(variant)
    if variant == "jax_nnx":
        from flax import nnx

        return module.Agent(obs_dim, hidden, num_actions, False, rngs=nnx.Rngs(2))
    return module.Agent(obs_dim, hidden, num_actions, False, key=jax.random.key(2))


def layers_of(variant: str, agent, name: str) -> list:
    """The layers of the actor or the critic, input first, as (kernel as Linen lays it out: (in, out), bias)."""
    mlp = getattr(agent, name)
    if variant == "jax_nnx":
        return [(layer.kernel[...], layer.bias[...]) for layer in [*mlp.layers, mlp.out]]
    return [(layer.weight.T, layer.bias) for layer in mlp.layers]  # Equinox's weight is (out, in)


# Equinox's under the slow marker (about 10 s on 2 cores): its record of Linen's run is checked by test_sac_jax.py too
@pytest.mark.parametrize(
    "variant",
    [
        v if v != "jax_equinox" else pytest.param(v, marks=pytest.mark.slow)
        for v in ("jax_nnx", "jax_equinox")
        if v in JIT_VARIANTS
    ],
)
@needs("jax_linen")
def test_network_is_linens_network(variant):
    linen_module = load("jax_linen")
    hidden, num_actions = (16, 8), 3
    obs = jax.random.normal(jax.random.key(0), (5, 2, 3))  # flattened to 6 features by both
    linen_params = linen_module.Agent(hidden, num_actions, False).init(jax.random.key(1), obs)["params"]
    agent = build_agent(variant, 6, hidden, num_actions)
    gains = [np.sqrt(2)] * len(hidden)

    for name, out_gain in (("actor", 0.01), ("critic", 1.0)):
        layers = layers_of(variant, agent, name)
        dense = [linen_params[name][f"Dense_{i}"] for i in range(len(layers))]
        assert len(linen_params[name]) == len(layers)
        for (kernel, bias), d, gain in zip(layers, dense, [*gains, out_gain]):
            assert kernel.shape == d["kernel"].shape and bias.shape == d["bias"].shape
            np.testing.assert_allclose(orthogonal_gain(kernel), gain, rtol=1e-5)
            np.testing.assert_allclose(orthogonal_gain(d["kernel"]), gain, rtol=1e-5)
            assert not np.any(bias) and not np.any(d["bias"])
        # Linen's parameters into the variant's network: the same function must come out.
        agent = with_layers(variant, agent, name, [(d["kernel"], d["bias"] + 0.1) for d in dense])

    linen_params = jax.tree.map(lambda x: x + 0.1 if x.ndim == 1 else x, linen_params)
    expected_policy, expected_value = linen_module.Agent(hidden, num_actions, False).apply({"params": linen_params}, obs)
    policy, value = agent(obs)
    logits = policy.logits
    np.testing.assert_allclose(logits, expected_policy.logits, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(value, expected_value, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(agent.value(obs), value, rtol=1e-6, atol=1e-6)
    assert logits.dtype == value.dtype == jnp.float32


# Two runs each, about 30 s on 2 cores: with -m slow. By default SAC's, TD3's and DQN's same-start updates
# (test_sac_jax.py, test_td3_jax.py, test_dqn.py) and PPO's loss (test_equivalence.py) check the same programs.
@pytest.mark.slow
@pytest.mark.parametrize("variant", [v for v in ("jax_nnx", "jax_equinox") if v in JIT_VARIANTS])
@needs("jax_linen")
def test_started_from_linens_parameters_it_runs_linens_run(variant, monkeypatch):
    """The same seed draws the same actions, permutations and env steps in every JAX script; only the initial
    parameters differ by framework. Given Linen's, the variant must give Linen's returns, iteration by
    iteration: the same PPO, so that how the variants learn can differ only through where they start."""
    linen, module = load("jax_linen"), load(variant)
    monkeypatch.setattr(module, "Agent", module.Agent)  # put back after the test
    start_from_linen(variant, module, linen, seed=1)
    record = module.train(module.Args(**RISE))
    reference, _ = rise_run("jax_linen")
    assert record["args"]["seed"] == reference["args"]["seed"] == 1
    np.testing.assert_allclose(record["episodic_return"], reference["episodic_return"], rtol=1e-4)
