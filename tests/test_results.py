"""Every report committed under results/ is what plot.py makes of its records today: each is regenerated from
results/records/NAME and compared with results/NAME, so a change to plot.py that moves a published number (or a
report left from an older plot.py) fails here. About two minutes on 2 cores, so opt-in with the other slow tests:
python -m pytest -m slow tests/test_results.py"""

import subprocess
import sys

import pytest

from conftest import ROOT

RESULTS = ROOT / "results"
REPORTED = sorted(p.name for p in (RESULTS / "records").iterdir() if (RESULTS / p.name / "summary.json").exists())


def test_every_records_directory_has_its_report():
    assert REPORTED == sorted(p.name for p in (RESULTS / "records").iterdir() if p.is_dir())


@pytest.mark.slow
@pytest.mark.parametrize("name", REPORTED)
def test_a_committed_report_regenerates_unchanged_from_its_records(name, tmp_path):
    proc = subprocess.run(
        [sys.executable, "plot.py", f"results/records/{name}", "--out", str(tmp_path)],  # the path its report names
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    committed = RESULTS / name
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in committed.iterdir())
    for report in ("summary.json", "summary.md"):  # the figures are drawn from the same numbers
        assert (tmp_path / report).read_text() == (committed / report).read_text(), f"results/{name}/{report}"
