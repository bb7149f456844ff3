"""The default config learns CartPole-v1: PPO that does not learn is not worth timing."""

import pytest

from conftest import BACKGROUND_RUNS, read_json

LEARNING_VARIANTS, _ = BACKGROUND_RUNS["learned"]  # all but linen_nojit: see conftest.py


@pytest.mark.parametrize("variant", LEARNING_VARIANTS)
def test_default_config_learns_cartpole(variant, learned):
    proc, _, out = learned(variant)
    assert proc.returncode == 0, proc.stderr[-3000:]
    record = read_json(out)
    assert record["env_steps"] == 819200 and record["args"]["seed"] == 1
    assert record["final_return"] >= 475, record["episodic_return"]
    assert record["compiles_after_first_iteration"] == 0
