"""Same work, same math, same network across the five variants.

test_math.py checks each variant against NumPy loops; this file compares the variants with each
other: the smoke runs of one config, and the loss gradients of one random minibatch."""

import numpy as np
import pytest

from conftest import CRAFTAX_DEFAULT, VARIANTS, load, loss_and_output_grads, make_batch, read_json, to_native, to_numpy
from test_contract import mlp_params

pytestmark = pytest.mark.skipif(len(VARIANTS) < 2, reason="needs two variants to compare")


def check_the_same_work(run, variants):
    """The runs of `variants` (run(variant) -> process, directory, record path) did the same work, same network."""
    records = {}
    for variant in variants:
        proc, _, out = run(variant)
        assert proc.returncode == 0, f"{variant}: {proc.stderr[-2000:]}"
        assert "texture" not in (proc.stdout + proc.stderr).lower()  # craftax says when it loads them: never here
        records[variant] = read_json(out)
    for key in ("param_count", "env_steps", "grad_steps", "hidden", "matmul_precision"):
        values = {variant: record[key] for variant, record in records.items()}
        assert len({str(v) for v in values.values()}) == 1, f"{key} differs: {values}"
    assert {v: r["compiles_after_first_iteration"] for v, r in records.items()} == dict.fromkeys(records, 0)
    return records


def test_every_variant_does_the_same_work_with_the_same_network(smoke):
    check_the_same_work(smoke, VARIANTS)


def check_craftax(records):
    """It was Craftax: its 1,345 observation features in the network, its version recorded."""
    assert all(r["env_id"] == "Craftax-Classic-Symbolic-v1" and "craftax" in r["versions"] for r in records.values())
    assert next(iter(records.values()))["param_count"] == mlp_params([1345, 32, 16, 17]) + mlp_params([1345, 32, 16, 1])


@pytest.mark.slow  # Craftax's compilation: about a minute of CPU in two runs; test_craftax.py checks the adapter
@pytest.mark.skipif(len(CRAFTAX_DEFAULT) < 2, reason="needs jax_linen and torch")
def test_on_craftax_a_jitted_and_an_eager_variant_do_the_same_work(craftax):
    check_craftax(check_the_same_work(craftax, CRAFTAX_DEFAULT))


@pytest.mark.slow
def test_on_craftax_every_variant_does_the_same_work(craftax, craftax_rest):
    run = lambda v: (craftax if v in CRAFTAX_DEFAULT else craftax_rest)(v)
    check_craftax(check_the_same_work(run, VARIANTS))


def test_loss_and_its_output_gradients_agree_across_variants():
    rng = np.random.default_rng(7)
    n, num_actions = 128, 4
    arrays = dict(
        logits=rng.normal(size=(n, num_actions)),
        value=rng.normal(size=n),
        obs=np.zeros((n, 3)),
        logprob=rng.normal(-1.4, 0.3, size=n),
        old_value=rng.normal(size=n),
        advantage=rng.normal(size=n),
        returns=rng.normal(size=n),
    )
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    action = rng.integers(0, num_actions, size=n)
    results = {}
    for variant in VARIANTS:
        module, native = load(variant), (lambda x, v=variant: to_native(v, x))
        mb = make_batch(
            variant,
            module,
            obs=arrays["obs"],
            action=action,
            logprob=arrays["logprob"],
            value=arrays["old_value"],
            advantage=arrays["advantage"],
            returns=arrays["returns"],
        )
        loss, info, grads = loss_and_output_grads(
            variant, module, native(arrays["logits"]), native(arrays["value"]), mb, module.Args()
        )
        assert sorted(info) == ["approx_kl", "clipfrac", "entropy", "old_approx_kl", "policy_loss", "value_loss"]
        results[variant] = [to_numpy(loss), *(to_numpy(info[k]) for k in sorted(info)), *map(to_numpy, grads)]
    reference = results.pop(VARIANTS[0])
    for variant, values in results.items():
        for got, want in zip(values, reference):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=f"{variant} vs {VARIANTS[0]}")
