"""The compiler caches a run starts with: the environment of the caches a sweep's runs share (warm) or of fresh ones
(cold), and torch.compile started afresh within a process."""

import os


def warm_compiler_caches(directory: str) -> dict:
    """The environment of a run that reads and writes the compiler caches under `directory`, shared by every run given
    the same: JAX's persistent compilation cache, every program in it however quickly it compiled (by default JAX keeps
    only those that took a second: jax/_src/config.py, jax_persistent_cache_min_compile_time_secs) with XLA's own
    caches beside it (a GPU's kernels and autotuning: jax/_src/compiler.py, get_compile_options), and Inductor's FX-graph and
    AOT-autograd caches with Triton's kernels (on by default in torch, unless TORCH_COMPILE_FORCE_DISABLE_CACHES)."""
    return {
        "JAX_COMPILATION_CACHE_DIR": os.path.join(directory, "jax"),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
        "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "all",
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "1",
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(directory, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(directory, "triton"),
    }


COMPILER_CACHE_VARIABLES = {*warm_compiler_caches(""), "TORCH_COMPILE_FORCE_DISABLE_CACHES"}


def fresh_compiler_caches(directory: str) -> dict:
    """The environment benchmark.sh gives each run for torch.compile: inductor's caches off, and inductor's and
    Triton's cache directories new, under `directory` (Triton keeps compiled kernels that the flag leaves on)."""
    return {
        "TORCH_COMPILE_FORCE_DISABLE_CACHES": "1",
        "TORCHINDUCTOR_CACHE_DIR": os.path.join(directory, "inductor"),
        "TRITON_CACHE_DIR": os.path.join(directory, "triton"),
    }


def reset_torch_compile() -> None:
    """torch.compiler.reset(), so that the next train() in this process compiles afresh as a new process would,
    keeping the compile callbacks registered so far (reset() drops them, a script's compile counter among them)."""
    import torch

    counters = list(torch._dynamo.callback_handler.start_callbacks)
    torch.compiler.reset()
    for counter in counters:
        torch._dynamo.callback_handler.register_start_callback(counter)
