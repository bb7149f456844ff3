"""For the tools in bench/: import a variant script (or any file of the project) as a module; write a result file."""

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load(script: str, name: str):
    """ROOT/script imported under `name`; a new name gives a fresh copy, to patch apart from the others."""
    spec = importlib.util.spec_from_file_location(name, ROOT / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dynamo and tyro look modules up by name
    spec.loader.exec_module(module)
    return module


def write_atomic(path, text: str) -> None:
    """Write a temporary file beside `path`, then rename it: a reader never sees half a file."""
    temporary = os.path.join(os.path.dirname(os.path.abspath(path)), f".tmp-{os.getpid()}")
    os.makedirs(os.path.dirname(temporary), exist_ok=True)
    with open(temporary, "w") as f:
        f.write(text)
    os.replace(temporary, path)
