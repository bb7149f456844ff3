"""--num-seeds: several seeds trained by one vmapped program, each starting exactly as its own run would."""

import math

import pytest

from benchback.cli import main
from conftest import DECLARED, EAGER_JAX_SLOW, QUIET, ROOT, SHORT_ARGS, as_flags, in_background, load, records_of


def offers_seeds(param) -> bool:
    variant = param.values[0] if hasattr(param, "values") else param
    return "\n    num_seeds: int" in (ROOT / DECLARED[variant].script).read_text()  # a field of its Args


SEEDED = [param for param in EAGER_JAX_SLOW if offers_seeds(param)]  # linen_nojit's eager runs: slow
ARGS = {**SHORT_ARGS, **QUIET, "total_timesteps": 2 * 8 * 32}  # two iterations


def two_seeds_then_the_second_alone(directory, variant):
    """The records of a run of seeds 1 and 2 at once, and of seed 2 alone (each a process of the script's)."""
    runs = (("both", ["--seed", "1", "--num-seeds", "2"]), ("second", ["--seed", "2"]))
    return records_of(variant, directory, runs, *as_flags(ARGS))


@pytest.mark.parametrize("variant", SEEDED)
@in_background(two_seeds_then_the_second_alone)
def test_each_vmapped_seed_starts_as_its_own_run_and_the_record_holds_every_seed(variant, background):
    both, second = background
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
    module = load(variant)
    assert main(module.Args, module.train, ["--num-seeds", "0", "--json-out", str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --num-seeds must be positive; got 0" and list(tmp_path.iterdir()) == []
