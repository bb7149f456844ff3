"""The default config learns CartPole-v1: PPO that does not learn is not worth timing."""

import pytest

from conftest import VARIANTS, load

# linen_nojit dispatches every op eagerly: a full default run is too slow for the default pytest;
# benchmark.sh's `learn` preset runs it in full; tests/test_nnx_nojit.py::test_short_run_improves
# checks here that its returns rise.
SLOW = {"linen_nojit"}


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v not in SLOW])
def test_default_config_learns_cartpole(variant, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    module = load(variant)
    record = module.train(module.Args(seed=1, tensorboard=False, quiet=True))
    assert record["env_steps"] == 819200
    assert record["final_return"] >= 475, record["episodic_return"]
    assert record["compiles_after_first_iteration"] == 0
