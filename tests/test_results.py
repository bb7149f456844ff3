"""Every report committed under results/ is what plot.py makes of its records today: each set's report
(results/KIND/SET/report) is regenerated from its records (results/KIND/SET/records) and compared, so a change to
plot.py that moves a published number (or a report left from an older plot.py) fails here. About two minutes on 2 cores, so opt-in with the other slow tests:
python -m pytest -m slow tests/test_results.py"""

import json
import math
import re
import subprocess
import sys

import pytest

from conftest import ROOT

RESULTS = ROOT / "results"
SETS = sorted(p.parent.relative_to(RESULTS).as_posix() for p in RESULTS.glob("*/*/records") if p.is_dir())
REPORTED = [name for name in SETS if (RESULTS / name / "report" / "summary.json").exists()]
# Sets whose records no report reads: a GPU self-check's three runs, kept for its logs
UNREPORTED = {"gpu/h200-check"}


def test_every_records_directory_has_its_report():
    assert sorted(set(REPORTED) | UNREPORTED) == SETS


def test_results_is_walked_by_kind_with_nothing_loose_at_its_top():
    """results/ holds its index, the answer and the kinds of sets; each set's name in lower case with hyphens."""
    assert sorted(p.name for p in RESULTS.iterdir()) == ["README.md", "answer", "archive", "gpu", "learn", "speed", "studies"]
    for kind in ("archive", "gpu", "learn", "speed", "studies"):
        for path in (RESULTS / kind).iterdir():
            assert path.is_dir() and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", path.name), path


def test_the_index_names_every_set():
    index = (RESULTS / "README.md").read_text()
    for kind in ("archive", "gpu", "learn", "speed", "studies"):
        for path in (RESULTS / kind).iterdir():
            assert f"{kind}/{path.name}/" in index, f"results/README.md does not index {kind}/{path.name}"


def leaves(value, path=""):
    """(path, value) for every number, string and null in a JSON document."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, f"{path}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from leaves(item, f"{path}/{i}")
    else:
        yield path, value


NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def within_last_digit(x: str, y: str) -> bool:
    """Two printed numbers at most one unit of the last digit shown apart (0.894 and 0.895; not 0.894 and 0.896)."""
    places = max(len(x.partition(".")[2]), len(y.partition(".")[2]))
    return abs(float(x) - float(y)) <= 10**-places * 1.000001


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-3) or math.isnan(a) and math.isnan(b)
    return a == b


@pytest.mark.slow
@pytest.mark.parametrize("name", REPORTED)
def test_a_committed_report_regenerates_unchanged_from_its_records(name, tmp_path):
    proc = subprocess.run(
        [sys.executable, "plot.py", f"results/{name}/records", "--out", str(tmp_path)],  # the path its report names
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    committed = RESULTS / name / "report"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in committed.iterdir())
    # On another CPU the bootstrap's sums run in another order, so near-equal resampled means can swap places and move
    # an interval's end in its 4th digit (seen between two AMD EPYC models): summary.json to 1 part in 1000, and
    # summary.md's text exactly with each printed number within one unit of its last digit. The figures are drawn
    # from the same numbers.
    made, kept = (dict(leaves(json.loads((d / "summary.json").read_text()))) for d in (tmp_path, committed))
    assert made.keys() == kept.keys(), f"results/{name}/report/summary.json"
    assert [path for path in made if not same(made[path], kept[path])] == [], f"results/{name}/report/summary.json"
    made_md, kept_md = ((d / "summary.md").read_text() for d in (tmp_path, committed))
    assert NUMBER.sub("#", made_md) == NUMBER.sub("#", kept_md), f"results/{name}/report/summary.md"
    apart = [(x, y) for x, y in zip(NUMBER.findall(made_md), NUMBER.findall(kept_md)) if not within_last_digit(x, y)]
    assert apart == [], f"results/{name}/report/summary.md"
