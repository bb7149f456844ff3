"""--configs: a search's batch of configurations trained by one vmapped program from one seed, each as its own run."""

import json
import math
import subprocess
import sys

import pytest

from benchback.cli import main
from conftest import DECLARED, QUIET, ROOT, SHORT_ARGS, VARIANTS, as_flags, in_background, load, records_of

BATCHED = [v if v == "jax_linen" else pytest.param(v, marks=pytest.mark.slow) for v in VARIANTS if DECLARED[v].configs]
# two configurations far apart in every number a configuration sets, the learning rate among them
CONFIGS = [
    {"learning_rate": 0.02, "gamma": 0.9, "gae_lambda": 0.8, "clip_coef": 0.3},
    {"learning_rate": 1e-4, "gamma": 0.999, "gae_lambda": 1.0, "clip_coef": 0.1},
]


def the_batch_then_each_alone(directory, variant):
    """The records of the two configurations trained at once, of a batch of the first alone, and of each trained as its
    own run (a process of the script's each)."""
    (directory / "configs.json").write_text(json.dumps(CONFIGS))
    (directory / "one.json").write_text(json.dumps(CONFIGS[:1]))
    runs = [("batch", ["--configs", "configs.json"]), ("one", ["--configs", "one.json"])]
    runs += [(f"alone{i}", as_flags(config)) for i, config in enumerate(CONFIGS)]
    return records_of(variant, directory, runs, *as_flags({**SHORT_ARGS, **QUIET}))


@pytest.mark.parametrize("variant", BATCHED)
@in_background(the_batch_then_each_alone)
def test_each_configuration_of_a_batch_trains_as_its_own_run(variant, background):
    batch, one, *alone = background
    assert batch["compiles_after_first_iteration"] == 0 and batch["configs"] == CONFIGS
    assert batch["param_count"] == alone[0]["param_count"]  # one configuration's network, not two
    for lane, run in zip(batch["episodic_return"], alone):
        # every iteration after an update at the configuration's own numbers: equal to float rounding
        assert all(math.isclose(a, b, rel_tol=1e-3) for a, b in zip(lane, run["episodic_return"])), (lane, run)
    assert all(math.isclose(a, b, rel_tol=1e-3) for a, b in zip(one["episodic_return"][0], alone[0]["episodic_return"]))
    first, second = batch["episodic_return"]
    assert not math.isclose(first[-1], second[-1], rel_tol=1e-2)  # two configurations, not one twice


@pytest.mark.parametrize(
    "text, said",
    [
        ('[{"momentum": 0.9}]', "momentum cannot be set per configuration"),
        ("[]", "must hold a list of one or more configurations"),
        ("{learning_rate: 1}", "is not JSON"),
        ('[{"gamma": 1.5}]', "configuration 0: gamma must be between 0 and 1; got 1.5"),
        ('[{"gamma": 0.9}, {"clip_coef": 0.1}]', "every configuration must set the same names"),
        ('[{"gamma": true}]', "values must be finite numbers"),
        (None, "cannot be read"),
    ],
)
def test_bad_configurations_are_refused_in_one_line(text, said, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    if text is not None:
        (tmp_path / "configs.json").write_text(text)
    module = load("jax_linen")
    out = tmp_path / "x.json"
    assert main(module.Args, module.train, ["--configs", "configs.json", "--json-out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and not out.exists(), err


def test_a_batch_of_configurations_does_not_combine_with_several_seeds(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs.json").write_text(json.dumps(CONFIGS))
    module = load("jax_linen")
    assert main(module.Args, module.train, ["--configs", "configs.json", "--num-seeds", "2"]) == 2
    assert "does not combine with --num-seeds" in capsys.readouterr().err


# DQN's batch (dqn_jax_*.py): two configurations far apart in every number, greedy from the first learning iteration
# (epsilon at its end before learning starts) so that each one's learning rate, gamma and target period show at once.
DQN_CONFIGS = [
    {"learning_rate": 0.003, "gamma": 0.9, "exploration_fraction": 0.05, "target_network_frequency": 100},
    {"learning_rate": 1e-4, "gamma": 0.999, "exploration_fraction": 0.05, "target_network_frequency": 1000},
]
DQN_SHORT = ["--env-id", "CartPole-v1", "--total-timesteps", "4000", "--learning-starts", "1000"]
DQN_SHORT += ["--steps-per-iteration", "500", "--no-cuda", "--no-tensorboard", "--quiet"]
DQN_BATCHED = [
    "jax_linen",
    pytest.param("jax_nnx", marks=pytest.mark.slow),
    pytest.param("jax_equinox", marks=pytest.mark.slow),
]


def dqn_batch_then_each_alone(directory, name):
    """The records of DQN's two configurations trained at once, and of each as its own run (a process each)."""
    (directory / "configs.json").write_text(json.dumps(DQN_CONFIGS))
    runs = [("batch", ["--configs", "configs.json"])] + [(f"alone{i}", as_flags(c)) for i, c in enumerate(DQN_CONFIGS)]
    found = []
    for run, more in runs:
        command = [sys.executable, str(ROOT / f"dqn_{name}.py"), *DQN_SHORT, *more, "--json-out", f"{run}.json"]
        proc = subprocess.run(command, cwd=directory, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        found.append(json.loads((directory / f"{run}.json").read_text()))
    return found


@pytest.mark.parametrize("name", DQN_BATCHED)
@in_background(dqn_batch_then_each_alone)
def test_each_dqn_configuration_of_a_batch_starts_as_its_own_run(name, background):
    """DQN's argmax turns a last-bit difference (a number traced, not a constant, in the batch's program) into another
    action, after which a run goes its own way, as one seed's runs on two CPUs can: the first iterations compare.
    A configuration's learning rate, gamma or target period not its own changes the first one's returns already."""
    batch, *alone = background
    assert batch["compiles_after_first_iteration"] == 0 and batch["configs"] == DQN_CONFIGS
    assert batch["random_episodes"] == alone[0]["random_episodes"]  # one configuration's random steps, not two
    for lane, run in zip(batch["episodic_return"], alone):
        assert all(math.isclose(a, b, rel_tol=1e-3) for a, b in zip(lane[:2], run["episodic_return"][:2])), (lane, run)
    first, second = batch["episodic_return"]
    assert not math.isclose(first[1], second[1], rel_tol=1e-2)  # two configurations, not one twice


@pytest.mark.parametrize(
    "text, said",
    [
        ('[{"target_network_frequency": 105}]', "configuration 0: target-network-frequency 105 is not a multiple"),
        ('[{"target_network_frequency": 100.0}]', "target_network_frequency must be a whole number"),
        ('[{"clip_coef": 0.2}]', "clip_coef cannot be set per configuration"),
        ('[{"exploration_fraction": 0}]', "configuration 0: exploration-fraction must be positive"),
    ],
)
def test_bad_dqn_configurations_are_refused_in_one_line(text, said, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "configs.json").write_text(text)
    module = load("dqn_jax_linen", "dqn_jax_linen.py")
    out = tmp_path / "x.json"
    assert main(module.Args, module.train, ["--configs", "configs.json", "--json-out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0] and not out.exists(), err
