"""For the tools in bench/ and the tests: import a variant script (or any file of the project) as a module, check
that a result can be written before the work, write it, make torch.compile start afresh."""

import contextlib
import importlib.util
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
    """Why `path` (a file; with directory=True, a directory) cannot be written, or "" if it can. Nothing is created;
    write_atomic makes the missing directories."""
    path = Path(path).absolute()
    if path.is_dir() != directory and path.exists():
        return f"{path} is a {'file' if directory else 'directory'}"
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
        print(f"error: {flag} {Path(path).absolute()} cannot be written: {problem}", file=sys.stderr)
        raise SystemExit(2)


def write_atomic(path, text: str) -> None:
    """Write a temporary file beside `path`, then rename it: a reader never sees half a file, and a write that fails
    (a full disk, Ctrl-C) leaves no file behind."""
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)), f".tmp-{os.getpid()}")
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
