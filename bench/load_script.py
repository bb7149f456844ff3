"""For the tools in bench/ and the tests: import a variant script (or any file of the project) as a module, check
that a result can be written before the work, write it, make torch.compile start afresh."""

import contextlib
import importlib.util
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load(script: str, name: str):
    """ROOT/script imported under `name`; a new name gives a fresh copy, to patch apart from the others."""
    if str(ROOT) not in sys.path:  # the scripts import their sibling craftax_gymnax.py, as `python ppo_*.py` finds it
        sys.path.append(str(ROOT))
    spec = importlib.util.spec_from_file_location(name, ROOT / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dynamo and tyro look modules up by name
    spec.loader.exec_module(module)
    return module


def out_problem(path, directory: bool = False) -> str:
    """Why `path` (a file; with directory=True, a directory) cannot be written, or "" if it can: the one rule of every
    tool's output (and of the scripts' --json-out, which keep their own copy). Nothing is created; write_atomic makes
    the missing directories."""
    text = os.fspath(path)
    if not text:
        return "the path is empty"
    if not directory and text.endswith(os.sep):  # "new/" names a directory; the write would fail after the work
        return f"{text} names a directory; name a file"
    path = Path(path).absolute()
    if path.is_dir() != directory and path.exists():
        return f"{path} is a {'file' if directory else 'directory'}"
    if path.is_file() and not (os.access(path, os.W_OK) and path.stat().st_mode & 0o222):  # root ignores the mode
        return f"{path} is read-only"
    parent = path if directory else path.parent
    while not parent.is_dir():
        if parent.exists():
            return f"{parent} is a file"
        parent = parent.parent
    probe = parent / f".tmp-check-{os.getpid()}"
    try:
        probe.touch()
        probe.unlink()
    except OSError as e:
        return f"{parent} does not accept files ({e.strerror})"
    return ""


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


def check_out(path, flag: str = "--out", directory: bool = False) -> None:
    """Exit 2 with one line if `path` cannot be written (out_problem): found before the work, not after it."""
    if problem := out_problem(path, directory):
        shown = Path(path).absolute() if os.fspath(path) else "''"
        print(f"error: {flag} {shown} cannot be written: {problem}", file=sys.stderr)
        raise SystemExit(2)


def earlier_result(path) -> dict:
    """The JSON object at `path` that a tool extends (env_cost.py's, bench/host_cost.py's), or {}: none there, or one
    that cannot be read as an object, which is measured again and replaced (with a warning, not a traceback)."""
    if not os.path.exists(path):
        return {}
    try:
        found = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        found = e
    if isinstance(found, dict):
        return found
    problem = found if isinstance(found, Exception) else f"a JSON {type(found).__name__}, not an object"
    print(f"warning: {path} cannot be read ({problem}); measured again and replaced", file=sys.stderr)
    return {}


def write_atomic(path, text: str) -> None:
    """Write a temporary file beside `path`, then rename it: a reader never sees half a file, and a write that fails
    (a full disk, Ctrl-C) leaves no file behind. The temporary file's name ends as `path`'s (.tmp-PID-NAME), so that
    what a SIGKILL leaves is known by its kind (a sweep removes its .tmp-*.json)."""
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)), f".tmp-{os.getpid()}-{os.path.basename(path)}")
    os.makedirs(os.path.dirname(temporary), exist_ok=True)
    try:
        with open(temporary, "w") as f:
            f.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def reset_torch_compile() -> None:
    """torch.compiler.reset(), so that the next train() in this process compiles afresh as a new process would,
    keeping the compile callbacks registered so far (reset() drops them, a script's compile counter among them)."""
    import torch

    counters = list(torch._dynamo.callback_handler.start_callbacks)
    torch.compiler.reset()
    for counter in counters:
        torch._dynamo.callback_handler.register_start_callback(counter)
