"""No host sync inside a timed iteration: the JAX timed calls run under jax's transfer guards, and
each guard fires on a deliberately syncing run."""

import jax
import pytest

from conftest import VARIANTS, HostSync, load

SHORT_ARGS = dict(cuda=False, num_envs=8, num_steps=32, num_minibatches=4, update_epochs=2, total_timesteps=2 * 8 * 32,
                  tensorboard=False, quiet=True)
needs = lambda variant: pytest.mark.skipif(variant not in VARIANTS, reason=f"{variant} script missing")


@needs("linen_nojit")
@pytest.mark.parametrize("read", [float, lambda x: x.tolist(), lambda x: x.item(), lambda x: jax.device_get(x)],
                         ids=["float", "tolist", "item", "device_get"])
def test_a_read_back_to_the_host_in_the_timed_region_fails_the_run(monkeypatch, trap_jax_host_reads, read):
    module = load("linen_nojit")
    import jax.numpy as jnp

    compute_gae = module.compute_gae

    def syncing_gae(rewards, *rest):
        read(jnp.sum(rewards))  # a device-to-host read: a sync on a GPU
        return compute_gae(rewards, *rest)

    monkeypatch.setattr(module, "compute_gae", syncing_gae)
    with pytest.raises(HostSync):
        module.train(module.Args(**SHORT_ARGS))
    assert len(trap_jax_host_reads) == 1


@needs("jax_linen")
def test_an_input_left_on_the_host_fails_the_timed_call(monkeypatch):
    """Without the explicit device_put of the training state, TrainState's step (a Python int) would be
    copied to the device by every first call of the jitted iteration: the guard names it."""
    module = load("jax_linen")
    import jax

    monkeypatch.setattr(jax, "device_put", lambda tree, *args, **kwargs: tree)
    with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
        module.train(module.Args(**SHORT_ARGS))


@pytest.mark.parametrize("variant", [v for v in ("jax_linen", "jax_nnx", "linen_nojit") if v in VARIANTS])
def test_the_jax_scripts_run_clean_under_the_guards(variant, trap_jax_host_reads):
    module = load(variant)
    record = module.train(module.Args(**SHORT_ARGS, sync_timing=True))
    record |= module.train(module.Args(**SHORT_ARGS))
    assert len(record["iteration_durations"]) == 2 and record["compiles_after_first_iteration"] == 0
    assert trap_jax_host_reads == []
