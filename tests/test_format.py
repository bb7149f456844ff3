"""The code is formatted and linted by the project's tools (ruff format and ruff check, configured in ruff.toml)."""

import subprocess
import sys

import pytest

from conftest import ROOT


@pytest.mark.parametrize("command", [["format", "--check", "--diff"], ["check"]])
def test_every_python_file_passes_ruff(command):
    proc = subprocess.run([sys.executable, "-m", "ruff", *command, "."], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"run `ruff {command[0]}` in {ROOT}:\n{proc.stdout[-4000:]}{proc.stderr[-2000:]}"
