"""Traps for host syncs inside a timed iteration, for the tests and `benchmark.sh --preset gpu-check`.

The scripts run every timed iteration but the first under jax's transfer guard for reads back to
the host ("disallow"; iteration 0 compiles, and compiling may read); that marks the region. Inside
it, each trapped read is recorded with where it came from, and:
- a read of a JAX array back to the host fails. On a GPU jax's guard does that itself; on the CPU a
  JAX array already lives in host memory and jax lets the read through, so the trap stands in for it
  (np.asarray reads a CPU array through the buffer protocol, which no Python patch reaches);
- torch's host reads fail: the Tensor methods in TORCH_READS, and, with scalar_reads, any op that
  reads a scalar back (_local_scalar_dense: under .item() and multinomial's checks, among others).
  That part is a dispatch mode, which makes dynamo trace around it (a compiled Adam would run
  eagerly), so compiled variants go without it: a host read in a compiled frame is a graph break,
  which the compile counters see.
Reads by torch.compile's own compiler are let through, should it run after iteration 0 (the compile counters
fail such a run anyway).
"""

import contextlib
import os
import traceback

TORCH_READS = ("item", "tolist", "numpy", "cpu", "nonzero", "__bool__", "__float__", "__int__", "__index__")


class HostSync(AssertionError):
    """A host read of a device array inside a timed iteration."""


def read_site() -> str:
    """Where a trapped read came from: the innermost frame outside this file, and the innermost in a ppo_*.py or sac_*.py
    script if that is another, as "file:line" (a library's path from its package on)."""
    frames = [f for f in traceback.extract_stack() if f.filename != __file__]

    def short(frame):
        parts = frame.filename.split(os.sep)
        tail = parts[parts.index("site-packages") + 1 :] if "site-packages" in parts else parts[-1:]
        return f"{'/'.join(tail)}:{frame.lineno}"

    scripts = [f for f in frames if os.path.basename(f.filename).startswith(("ppo_", "sac_"))]
    sites = [frames[-1], *scripts[-1:]] if frames else scripts[-1:]
    return " from ".join(dict.fromkeys(map(short, sites)))


def in_timed_iteration() -> bool:
    from jax._src import config

    if config.transfer_guard_device_to_host.value != "disallow":
        return False
    try:
        import torch._guards
    except ImportError:
        return True
    return torch._guards.TracingContext.try_get() is None  # not torch.compile's compiler at work


@contextlib.contextmanager
def trapped_host_reads(torch_too: bool = False, scalar_reads: bool = True):
    """Install the traps; yields the list of the reads trapped (each also raised HostSync)."""
    import jax.numpy as jnp

    trapped, patches = [], []

    def trap(what, original):
        def guarded(self, *args, **kwargs):
            if in_timed_iteration():
                trapped.append(f"{what} at {read_site()}")
                raise HostSync(f"{trapped[-1]} inside a timed iteration: a host sync on a GPU")
            return original(self, *args, **kwargs)

        return guarded

    def patch(owner, name, value):
        patches.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    array_type = type(jnp.zeros(1))
    patch(
        array_type, "_value", property(trap("jax.Array read (float, int, bool, tolist, device_get)", array_type._value.fget))
    )
    for name in ("__array__", "item"):
        patch(array_type, name, trap(f"jax.Array.{name}", getattr(array_type, name)))
    with contextlib.ExitStack() as stack:
        if torch_too:
            import torch
            from torch.utils._python_dispatch import TorchDispatchMode

            for name in TORCH_READS:
                patch(torch.Tensor, name, trap(f"Tensor.{name}", getattr(torch.Tensor, name)))

            class ScalarReads(TorchDispatchMode):
                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    if in_timed_iteration() and func.__name__.startswith("_local_scalar_dense"):
                        trapped.append(f"{func.__name__} at {read_site()}")
                        raise HostSync(f"{trapped[-1]} inside a timed iteration: a host sync on a GPU")
                    return func(*args, **(kwargs or {}))

            if scalar_reads:
                stack.enter_context(ScalarReads())
        try:
            yield trapped
        finally:
            for owner, name, original in reversed(patches):
                setattr(owner, name, original)
