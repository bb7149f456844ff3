"""The machine a run ran on, as its record names it: the CPU (model, cores, the OpenMP and allocator settings), the GPU
and its drivers as each framework reports them, and the checkout's commit."""

import os
import platform
import subprocess
from typing import Optional

from jax._src.lib import cuda_versions  # the CUDA plugin's version queries (None without one)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the checkout, whose commit a record names


def cpu_info() -> dict:
    """The CPU model as Linux names it, the cores this process may use (timings of two models never mix), the
    OpenMP settings the process ran under (how torch's threads wait, which can change its CPU time twofold) and the
    allocator's (glibc's tunables, a preloaded malloc): whether freed memory goes back to the kernel, to be faulted
    in again page by page, which slows every call that allocates much afresh (docs/findings.md)."""
    first = ""
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as f:
            first = f.read().split("\n\n")[0]  # the first processor's block
    fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
    model = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields:  # hypervisors may hide the name ("AMD EPYC"), not the family and model numbers
        model += f" (family {fields['cpu family']}, model {fields.get('model')})"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    openmp = {name: os.environ.get(name) for name in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    allocator = {name: os.environ.get(name) for name in ("GLIBC_TUNABLES", "LD_PRELOAD")}
    return {"model": model, "cores": cores, "openmp": openmp, "allocator": allocator}


def gpu_info(jax_device, torch_device=None) -> Optional[dict]:
    """What a GPU result needs to be read, as each framework on it reports it (the driver as nvidia-smi does), with each
    allocator's own peak (torch counts its tensors, XLA its buffers); None on the CPU."""
    if jax_device.platform == "cpu":
        return None
    version = lambda name: getattr(cuda_versions, name, lambda: None)() if cuda_versions else None
    cuda = {"cuda_runtime": version("cuda_runtime_get_version"), "cudnn": version("cudnn_get_version")}
    jax_info = {"device_kind": jax_device.device_kind, "platform_version": jax_device.client.platform_version, **cuda}
    driver = run_quietly("nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader")  # a line per GPU
    jax_peak = (jax_device.memory_stats() or {}).get("peak_bytes_in_use")
    info = {"name": jax_device.device_kind, "driver": driver and driver.split()[0], "jax": jax_info}
    info["peak_memory_mb"] = {"jax": jax_peak and jax_peak / 2**20}
    if torch_device is not None:
        import torch

        info["name"] = torch.cuda.get_device_name(torch_device)
        info["torch"] = {"cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
        info["peak_memory_mb"]["torch"] = torch.cuda.max_memory_allocated(torch_device) / 2**20
    return info


def run_quietly(*command: str) -> Optional[str]:
    """A command's output, or None if it is missing or fails."""
    try:
        out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None
