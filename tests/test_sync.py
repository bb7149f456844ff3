"""No host sync inside a timed iteration, and no silent CPU fallback: the timed iterations run under
jax's transfer guards, each trap fires on a deliberately syncing run, and the device is what both
frameworks see or a clear error."""

import contextlib

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


# ---------------------------------------------------------------- torch: host syncs trapped
TORCH = [v for v in ("torch", "torch_compile") if v in VARIANTS]
# torch's ways to read a tensor back to the host: each is a device sync on a GPU.
TORCH_READS = ("item", "tolist", "numpy", "cpu", "nonzero", "__bool__", "__float__", "__int__", "__index__")


@pytest.fixture
def trap_torch_host_reads(monkeypatch, trap_jax_host_reads):
    """trap(scalar_reads) -> the list of trapped reads: torch's host reads fail inside a timed iteration,
    which the scripts mark by running it under jax's transfer guard. Trapped: the tensor methods above
    and, with scalar_reads, any op that reads a scalar back (_local_scalar_dense, under .item() and
    multinomial's checks, among others). A dispatch mode makes dynamo trace around it (the compiled
    Adam would run eagerly), so torch_compile's run goes without it: a host read in a compiled frame
    would be a graph break, which test_torch.py's frame count sees."""
    import torch
    from jax._src import config
    from torch.utils._python_dispatch import TorchDispatchMode

    trapped = trap_jax_host_reads
    # In a timed iteration, and not inside torch.compile's compiler (iteration 0's compilation folds
    # constants on the host: the compiler's work once, not a sync of every iteration).
    timed = lambda: (config.transfer_guard_device_to_host.value == "disallow"
                     and torch._guards.TracingContext.try_get() is None)

    def trap(name, original):
        def guarded(self, *args, **kwargs):
            if timed():
                trapped.append(name)
                raise HostSync(f"Tensor.{name} inside a timed iteration: a host sync on a GPU")
            return original(self, *args, **kwargs)
        return guarded

    for name in TORCH_READS:
        monkeypatch.setattr(torch.Tensor, name, trap(name, getattr(torch.Tensor, name)))

    class ScalarReads(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if timed() and func.__name__.startswith("_local_scalar_dense"):
                trapped.append(func.__name__)
                raise HostSync(f"{func.__name__} inside a timed iteration: a host sync on a GPU")
            return func(*args, **(kwargs or {}))

    with contextlib.ExitStack() as modes:
        def start(scalar_reads=True):
            if scalar_reads:
                modes.enter_context(ScalarReads())
            return trapped

        yield start


@pytest.mark.parametrize("variant", TORCH)
@pytest.mark.parametrize("sync_timing", [False, True])
def test_the_torch_scripts_make_no_host_read_in_a_timed_iteration(variant, sync_timing, trap_torch_host_reads):
    module = load(variant)
    trapped = trap_torch_host_reads(scalar_reads=variant == "torch")
    record = module.train(module.Args(**SHORT_ARGS, sync_timing=sync_timing))
    assert len(record["iteration_durations"]) == 2 and trapped == []


@needs("torch")
@pytest.mark.parametrize("read", ["item", "tolist", "__bool__", "nonzero", "numpy", "__float__"])
def test_a_torch_host_read_in_the_timed_region_fails_the_run(monkeypatch, trap_torch_host_reads, read):
    module = load("torch")
    compute_gae = module.compute_gae

    def syncing_gae(rewards, *rest):
        getattr(rewards.sum() if read != "nonzero" else rewards, read)()
        return compute_gae(rewards, *rest)

    monkeypatch.setattr(module, "compute_gae", syncing_gae)
    trapped = trap_torch_host_reads()
    with pytest.raises(HostSync):
        module.train(module.Args(**SHORT_ARGS))
    assert len(trapped) == 1


# ---------------------------------------------------------------- device honesty
@pytest.mark.parametrize("variant", TORCH)
@pytest.mark.parametrize("gpu_in", ["torch", "jax"])
def test_a_gpu_seen_by_one_framework_only_is_an_error_naming_it(variant, gpu_in, monkeypatch, tmp_path, capsys):
    module = load(variant)
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu_in == "torch")
    monkeypatch.setattr(module, "jax_gpus", lambda: ["a GPU"] if gpu_in == "jax" else [])
    assert module.main(["--json-out", str(tmp_path / "x.json"), "--quiet"]) == 2
    other = {"torch": "jax", "jax": "torch"}[gpu_in]
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {gpu_in} sees a GPU but {other} does not") and "\n" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_gpu_anywhere_runs_on_the_cpu_and_says_so_first(variant, monkeypatch, capsys):
    module = load(variant)
    import jax

    devices = jax.devices

    def no_gpu(backend=None):
        if backend == "gpu":
            raise RuntimeError("no gpu backend (simulated)")
        return devices(backend)

    monkeypatch.setattr(jax, "devices", no_gpu)
    if variant.startswith("torch"):
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    record = module.train(module.Args(**{**SHORT_ARGS, "cuda": True}))
    assert capsys.readouterr().err.splitlines()[0].startswith("no GPU visible to")
    assert record["device"] == "cpu" and record["gpu"] is None
