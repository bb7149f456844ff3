"""Import a variant script (or any file of the project) as a module, for the tools in bench/, the studies and the
tests."""

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load(script: str, name: str):
    """ROOT/script imported under `name`; a new name gives a fresh copy, to patch apart from the others."""
    if str(ROOT) not in sys.path:  # the scripts import benchback/ from the root, as `python ppo_*.py` finds it
        sys.path.append(str(ROOT))
    spec = importlib.util.spec_from_file_location(name, ROOT / script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dynamo and tyro look modules up by name
    spec.loader.exec_module(module)
    return module
