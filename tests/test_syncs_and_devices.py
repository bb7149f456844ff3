"""No host sync inside a timed iteration, and no silent CPU fallback: the timed iterations run under
jax's transfer guards, each trap fires on a deliberately syncing run, and the device is what both
frameworks see or a clear error."""

import functools
import inspect
import re
from pathlib import Path

import jax
import pytest

from benchback import machine
from benchback.cli import main
from benchback.machine import gpu_info
from conftest import (
    DECLARED,
    ONE_PER_FRAMEWORK_SLOW,
    QUIET,
    SHORT_ARGS,
    TORCH_VARIANTS,
    VARIANTS,
    HostSync,
    framework,
    load,
    needs,
)

SHORT_ARGS = {**SHORT_ARGS, **QUIET}


@needs("linen_nojit")
@pytest.mark.parametrize(  # one way of reading by default, the other three under -m slow (a run of the script each)
    "read",
    [
        pytest.param(float, marks=pytest.mark.slow),
        pytest.param(lambda x: x.tolist(), marks=pytest.mark.slow),
        lambda x: x.item(),
        pytest.param(lambda x: jax.device_get(x), marks=pytest.mark.slow),
    ],
    ids=["float", "tolist", "item", "device_get"],
)
def test_a_read_back_to_the_host_in_the_timed_region_fails_the_run(monkeypatch, trap_host_reads, read):
    module = load("linen_nojit")
    import jax.numpy as jnp

    compute_gae = module.compute_gae

    def syncing_gae(rewards, *rest):
        read(jnp.sum(rewards))  # a device-to-host read: a sync on a GPU
        return compute_gae(rewards, *rest)

    monkeypatch.setattr(module, "compute_gae", syncing_gae)
    trapped = trap_host_reads()
    with pytest.raises(HostSync):
        module.train(module.Args(**SHORT_ARGS))
    assert len(trapped) == 1


@needs("jax_linen")
def test_an_input_left_on_the_host_fails_the_timed_call(monkeypatch):
    """Without the explicit device_put of the training state, TrainState's step (a Python int) would be
    copied to the device by every first call of the jitted iteration: the guard names it."""
    module = load("jax_linen")
    import jax

    monkeypatch.setattr(jax, "device_put", lambda tree, *args, **kwargs: tree)
    with pytest.raises(Exception, match="Disallowed host-to-device transfer"):
        module.train(module.Args(**SHORT_ARGS))


@pytest.mark.parametrize("variant", [param for param, v in zip(ONE_PER_FRAMEWORK_SLOW, VARIANTS) if framework(v) == "jax"])
def test_the_jax_scripts_run_clean_under_the_guards(variant, trap_host_reads):
    module = load(variant)
    trapped = trap_host_reads()
    record = module.train(module.Args(**SHORT_ARGS, sync_timing=True))
    record |= module.train(module.Args(**SHORT_ARGS))
    assert len(record["iteration_durations"]) == 3 and record["compiles_after_first_iteration"] == 0
    assert trapped == []


# ---------------------------------------------------------------- torch: host syncs trapped


@pytest.mark.parametrize("variant", TORCH_VARIANTS)
@pytest.mark.parametrize("sync_timing", [False, True])
def test_the_torch_scripts_make_no_host_read_in_a_timed_iteration(variant, sync_timing, trap_host_reads):
    module = load(variant)
    trapped = trap_host_reads(torch_too=True, scalar_reads=not DECLARED[variant].compiles)  # see sync_traps.py
    record = module.train(module.Args(**SHORT_ARGS, sync_timing=sync_timing))
    assert len(record["iteration_durations"]) == 3 and trapped == []


@needs("torch")
@pytest.mark.parametrize("read", ["item", "tolist", "__bool__", "nonzero", "numpy", "__float__"])
def test_a_torch_host_read_in_the_timed_region_fails_the_run(monkeypatch, trap_host_reads, read):
    module = load("torch")
    compute_gae = module.compute_gae

    def syncing_gae(rewards, *rest):
        getattr(rewards.sum() if read != "nonzero" else rewards, read)()
        return compute_gae(rewards, *rest)

    monkeypatch.setattr(module, "compute_gae", syncing_gae)
    trapped = trap_host_reads(torch_too=True)
    with pytest.raises(HostSync):
        module.train(module.Args(**SHORT_ARGS))
    assert len(trapped) == 1


# ---------------------------------------------------------------- device honesty
@pytest.mark.parametrize("variant", TORCH_VARIANTS)
@pytest.mark.parametrize("gpu_in", ["torch", "jax"])
def test_a_gpu_seen_by_one_framework_only_is_an_error_naming_it(variant, gpu_in, monkeypatch, tmp_path, capsys):
    module = load(variant)
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu_in == "torch")
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu" if gpu_in == "jax" else "cpu")
    assert main(module.Args, module.train, ["--json-out", str(tmp_path / "x.json"), "--quiet"]) == 2
    other = {"torch": "jax", "jax": "torch"}[gpu_in]
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {gpu_in} sees a GPU but {other} does not") and "\n" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("variant", ONE_PER_FRAMEWORK_SLOW)
def test_no_gpu_anywhere_runs_on_the_cpu_and_says_so_first(variant, monkeypatch, capsys):
    module = load(variant)
    import jax

    devices = jax.devices

    def no_gpu(backend=None):
        if backend == "gpu":
            raise RuntimeError("no gpu backend (simulated)")
        return devices(backend)

    monkeypatch.setattr(jax, "devices", no_gpu)
    if framework(variant) == "torch":
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    record = module.train(module.Args(**{**SHORT_ARGS, "cuda": True}))
    assert capsys.readouterr().err.splitlines()[0].startswith("no GPU visible to")
    assert record["device"] == "cpu" and record["gpu"] is None


@pytest.mark.parametrize("variant", TORCH_VARIANTS)
def test_sync_debug_traps_host_syncs_in_the_timed_work_and_not_the_final_synchronize(variant, monkeypatch):
    """--sync-debug on a GPU: torch's own trap is on for the iteration's work and off for the one
    torch.cuda.synchronize that ends it (CUDA simulated: the calls are recorded)."""
    module = load(variant)
    import torch

    calls, mode = [], [0]
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", lambda m: (calls.append(("mode", m)), mode.__setitem__(0, m)))
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: mode[0])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append(("synchronize", mode[0])))
    debug = module.Args(sync_debug=True)
    with module.no_syncs(debug, torch.device("cuda"), 1):
        calls.append(("work", mode[0]))
        module.synchronize(torch.device("cuda"))
    assert calls == [
        ("mode", "error"),
        ("work", "error"),
        ("mode", 0),
        ("synchronize", 0),
        ("mode", "error"),
        ("mode", "default"),
    ]
    calls.clear()
    for args, device, iteration in [
        (module.Args(sync_debug=False), "cuda", 1),  # the flag off
        (debug, "cpu", 1),  # on the CPU
        (debug, "cuda", 0),  # iteration 0, which compiles (and records CUDA graphs)
    ]:
        with module.no_syncs(args, torch.device(device), iteration):
            pass
    assert calls == []


# gpu_info is benchback/machine.py's: asked as a JAX script asks it (jax's device) and as a torch script does (both devices)
ONE_PER_FRAMEWORK = [next(v for v in VARIANTS if framework(v) == f) for f in ("jax", "torch")]


def gpu_info_of_a_fake_gpu(variant, monkeypatch):
    """gpu_info as the variant's record calls it, on a GPU as the frameworks describe one, faked."""
    import types

    client = types.SimpleNamespace(platform_version="cuda")
    stats = lambda: {"peak_bytes_in_use": 3 * 2**20, "bytes_in_use": 2**20}  # XLA's allocator's statistics
    jax_gpu = types.SimpleNamespace(platform="gpu", device_kind="GPU", client=client, memory_stats=stats)
    if framework(variant) == "torch":
        import torch

        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "GPU")
        monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: 5 * 2**20)
        return lambda: gpu_info(jax_gpu, torch.device("cuda"))
    return lambda: gpu_info(jax_gpu)


@pytest.mark.parametrize("variant", ONE_PER_FRAMEWORK)
def test_the_driver_version_comes_from_nvidia_smi_or_is_null(variant, monkeypatch):
    load(variant)
    import subprocess

    gpu_info = gpu_info_of_a_fake_gpu(variant, monkeypatch)
    driver_version = lambda: gpu_info()["driver"]
    reply = lambda code, out: lambda *a, **k: subprocess.CompletedProcess(a, code, out, "")
    monkeypatch.setattr(machine.subprocess, "run", reply(0, "550.54.15\n550.54.15\n"))  # one line per GPU
    assert driver_version() == "550.54.15"
    monkeypatch.setattr(machine.subprocess, "run", reply(9, ""))  # nvidia-smi without a driver
    assert driver_version() is None

    def missing(*args, **kwargs):
        raise FileNotFoundError("nvidia-smi")

    monkeypatch.setattr(machine.subprocess, "run", missing)
    assert driver_version() is None


@functools.cache
def installed_jax_source() -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace") for path in Path(jax.__file__).parent.rglob("*.py"))


@pytest.mark.parametrize("variant", ONE_PER_FRAMEWORK)
def test_the_cuda_versions_in_the_record_are_queries_jax_itself_makes(variant, monkeypatch):
    """Without a GPU the CUDA plugin is absent: the names gpu_info asks it for are checked against the calls
    the installed jax makes to it, and gpu_info runs against a plugin faked with those names."""
    import types

    load(variant)
    names = re.findall(r'version\("(\w+)"\)', inspect.getsource(gpu_info))
    assert len(names) == 2 and all(f"cuda_versions.{name}()" in installed_jax_source() for name in names)
    monkeypatch.setattr(machine, "cuda_versions", types.SimpleNamespace(**dict(zip(names, (lambda: 12080, lambda: 91100)))))
    monkeypatch.setattr(machine, "run_quietly", lambda *command: None)
    jax_info = gpu_info_of_a_fake_gpu(variant, monkeypatch)()["jax"]
    assert (jax_info["cuda_runtime"], jax_info["cudnn"]) == (12080, 91100)


@pytest.mark.parametrize("variant", ONE_PER_FRAMEWORK)
def test_the_gpu_record_holds_each_allocators_peak_in_mib(variant, monkeypatch):
    """On a GPU the record holds the peak of each framework's allocator: torch's max_memory_allocated, and the
    peak_bytes_in_use of XLA's memory_stats (a key the installed jaxlib reports), converted to MiB."""
    load(variant)
    monkeypatch.setattr(machine, "run_quietly", lambda *command: None)
    jaxlib = Path(jax.__file__).parent.parent / "jaxlib"
    assert any(b"peak_bytes_in_use" in path.read_bytes() for path in jaxlib.glob("*.so"))
    peak = gpu_info_of_a_fake_gpu(variant, monkeypatch)()["peak_memory_mb"]
    assert peak == ({"torch": 5.0, "jax": 3.0} if framework(variant) == "torch" else {"jax": 3.0})
