"""Every variant's iteration has one structure: the policy acts with the actor alone inside the rollout, and the
critic runs once after it, batched over the rollout's observations and final observations, never inside the rollout's
loop. Checked on the network itself: each call of the agent, its method and the number of observations it was given
(counted as the script calls it: in a compiled program, once per trace)."""

import pytest

from benchback import gymnax_envs
from benchback.gymnax_envs import make
from benchback.record import Log
from conftest import DECLARED, ONE_PER_FRAMEWORK_SLOW, QUIET, framework, load

# Sizes that tell the calls apart: a rollout step acts on num_envs observations, the critic values the rollout's
# 2 * num_steps * num_envs observations and final observations, the update's forward passes take a minibatch.
SIZES = dict(num_envs=4, num_steps=8, num_minibatches=2, update_epochs=1, total_timesteps=2 * 4 * 8, cuda=False)
STEP, ROLLOUT, MINIBATCH = 4, 2 * 8 * 4, 8 * 4 // 2
ITERATIONS = 2


def recorded_agent(module, calls: list, forward: str):
    """module.Agent, each call recorded in `calls` as (method, number of observations)."""

    class Recorded(module.Agent):
        def policy(self, obs):
            calls.append(("policy", obs.shape[0]))
            return super().policy(obs)

        def value(self, obs):
            calls.append(("value", obs.shape[0]))
            return super().value(obs)

    def both(self, obs):
        calls.append(("both", obs.shape[0]))
        return getattr(super(Recorded, self), forward)(obs)

    setattr(Recorded, forward, both)
    return Recorded


def agent_calls(variant: str, monkeypatch, **flags) -> list:
    """The agent's calls in a short run of the variant, as (method, number of observations)."""
    module = load(variant)
    calls = []
    forward = "forward" if framework(variant) == "torch" else "__call__"
    monkeypatch.setattr(module, "Agent", recorded_agent(module, calls, forward))
    start = Log.__init__  # made once everything is set up (Linen's init calls the agent): from there on
    monkeypatch.setattr(Log, "__init__", lambda log, *args: (calls.clear(), start(log, *args))[1])
    if framework(variant) == "torch":
        import torch

        # Run eagerly, so that every call is counted (compiled, a call is seen when dynamo traces it): the same code.
        monkeypatch.setattr(torch, "compile", lambda fn, **options: fn)
        monkeypatch.setattr(torch.optim, "Adam", eager_adam(torch.optim.Adam))
    record = module.train(module.Args(**SIZES, **QUIET, **flags))
    assert len(record["iteration_durations"]) == ITERATIONS
    return calls


def eager_adam(adam):
    """torch.optim.Adam as ppo_torch.py builds it: torch_compile's capturable Adam refuses a CPU when not compiled."""
    return lambda params, lr, eps, **_: adam(params, lr=lr, eps=eps, fused=True)


CASES = [*ONE_PER_FRAMEWORK_SLOW, pytest.param(("jax_linen", {"rollout": "python"}), marks=pytest.mark.slow)]
CASES += [("torch", {"env_backend": "torch"})]
CASES += [pytest.param(("torch_compile", {"env_backend": "torch"}), marks=pytest.mark.slow)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c if isinstance(c, str) else f"{c[0]}-{next(iter(c[1].values()))}")
def test_the_actor_alone_acts_and_the_critic_runs_once_after_the_rollout(case, monkeypatch):
    variant, flags = (case, {}) if isinstance(case, str) else case
    if variant not in DECLARED:
        pytest.skip(f"variant script missing: {variant}")
    calls = agent_calls(variant, monkeypatch, **flags)
    # The critic: never on a step's observations (inside the rollout); once a rollout on all of them; in the update
    # on minibatches (there with the actor: both).
    critic = [(method, rows) for method, rows in calls if method in ("value", "both")]
    assert {rows for _, rows in critic} == {ROLLOUT, MINIBATCH}, critic
    traced = framework(variant) == "jax" and DECLARED[variant].compiles  # once, into the iteration's program
    assert critic.count(("value", ROLLOUT)) == (1 if traced else ITERATIONS), critic
    # Acting: the actor alone, on a rollout step's observations.
    assert ("policy", STEP) in calls, calls


# one script of each framework by default: the others step the env with the same clipped (slow: compiling)
CLIPPED = [v if v in ("jax_linen", "torch") else pytest.param(v, marks=pytest.mark.slow) for v in DECLARED]


@pytest.mark.parametrize("variant", CLIPPED)
def test_a_continuous_action_is_clipped_to_its_bounds_for_the_env_step(variant, monkeypatch):
    """Reacher-misc does not clip its force: a script steps it with the sample clipped to [-1, 1], as CleanRL's
    ClipAction does. The policy's standard deviation starts at 1, so samples beyond the bounds come in every rollout;
    what the env's step is given is read from inside the program (jax.debug.callback)."""
    import jax
    import numpy as np

    module = load(variant)
    given, make_env = [], make

    def recorded(env_id):
        env, params = make_env(env_id)
        step = env.step

        def recording(key, state, action, env_params):
            jax.debug.callback(lambda a: given.append(np.abs(np.asarray(a)).max()), action)
            return step(key, state, action, env_params)

        env.step = recording
        return env, params

    monkeypatch.setattr(gymnax_envs, "make", recorded)
    module.train(module.Args(**{**SIZES, "total_timesteps": 4 * 8}, env_id="Reacher-misc", hidden="8", **QUIET))
    assert given and max(given) <= 1.0, max(given)
