"""What every tool does with its output: check before the work that a result can be written, read the earlier result
it extends, and write the result whole or not at all."""

import contextlib
import json
import os
import sys
from pathlib import Path


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


def check_out(path, flag: str = "--out", directory: bool = False) -> None:
    """Exit 2 with one line if `path` cannot be written (out_problem): found before the work, not after it."""
    if problem := out_problem(path, directory):
        shown = Path(path).absolute() if os.fspath(path) else "''"
        print(f"error: {flag} {shown} cannot be written: {problem}", file=sys.stderr)
        raise SystemExit(2)


def earlier_result(path) -> dict:
    """The JSON object at `path` that a tool extends (bench/env_cost.py's, bench/host_cost.py's), or {}: none there, or one
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
