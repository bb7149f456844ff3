"""--num-seeds: several seeds trained by one vmapped program, each starting exactly as its own run would."""

import math

import pytest

from conftest import DECLARED, EAGER_JAX_SLOW, QUIET, ROOT, SHORT_ARGS, load


def offers_seeds(param) -> bool:
    variant = param.values[0] if hasattr(param, "values") else param
    return "\n    num_seeds: int" in (ROOT / DECLARED[variant].script).read_text()  # a field of its Args


SEEDED = [param for param in EAGER_JAX_SLOW if offers_seeds(param)]  # linen_nojit's eager runs: slow
ARGS = {**SHORT_ARGS, **QUIET, "total_timesteps": 2 * 8 * 32}  # two iterations


@pytest.mark.parametrize("variant", SEEDED)
def test_each_vmapped_seed_starts_as_its_own_run_and_the_record_holds_every_seed(variant):
    module = load(variant)
    both = module.train(module.Args(**ARGS, seed=1, num_seeds=2))
    second = module.train(module.Args(**ARGS, seed=2))  # the vmapped run's second seed, alone
    assert both["compiles_after_first_iteration"] == 0
    assert both["param_count"] == second["param_count"]  # one seed's network, not two
    assert len(both["final_return"]) == 2 and [len(r) for r in both["episodic_return"]] == [2, 2]
    # The first iteration's rollout depends only on the start (parameters, env states, keys): equal to float
    # rounding. Later ones follow an update whose arithmetic vmap may order differently.
    first = both["episodic_return"][1][0]
    assert math.isclose(first, second["episodic_return"][0], rel_tol=1e-5), (both, second["episodic_return"])
    assert both["episodic_return"][0] != both["episodic_return"][1]  # two seeds, not one twice


@pytest.mark.parametrize("variant", [p for p in SEEDED if not hasattr(p, "marks") or not p.marks])
def test_zero_seeds_is_refused_in_one_line(variant, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert load(variant).main(["--num-seeds", "0", "--json-out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --num-seeds must be positive; got 0" and list(tmp_path.iterdir()) == []
