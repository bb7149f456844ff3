"""The code is formatted by the project's formatter (ruff format, configured in ruff.toml)."""

import subprocess
import sys

from conftest import ROOT


def test_every_python_file_is_formatted():
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--diff", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, f"run `ruff format` in {ROOT}:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
