"""What the reports and the tools never do in silence: drop records they cannot read (plot.py, report.front), leave a
report half made, write where they were not asked to (one rule for every output path), or give a traceback for a
measurement file they cannot read (bench/env_cost.py, bench/host_cost.py: measured again)."""

import json
import os
import stat
import subprocess
import sys

import pytest

from bench import load_script, outputs
from bench.run_records import write_failure
from conftest import ROOT, in_background
from report import front, timing_figures
from test_plot import plot, record, write  # plot.py loaded as a module; a schema-1 record plot.py reads


@pytest.fixture(autouse=True)
def _few_resamples(few_resamples):
    """Every test here reads made-up records (or committed ones it compares with themselves): the reports' bootstraps at
    a tenth of their resamples (conftest's few_resamples)."""


def a_sweep(directory):
    """Two variants' overall runs of CartPole-v1 at s, two seeds: enough for plot.py's report."""
    for variant, factor in (("jax_linen", 1.0), ("torch", 2.0)):
        for seed in (1, 2):
            run = record("overall", variant, "CartPole-v1", "s", seed, total=10 * factor, iteration=0.1 * factor)
            write(directory, f"overall/{variant}__CartPole-v1__s__seed{seed}.json", run)
    return directory


def unlistable(monkeypatch, folder):
    """os.scandir fails on `folder` as on a folder without read permission (root reads any: chmod cannot show it)."""
    real = os.scandir

    def scandir(path="."):
        if os.path.abspath(path) == os.path.abspath(folder):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def listing(directory):
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


def test_plot_refuses_a_records_folder_it_cannot_read_whole_and_writes_nothing(tmp_path, monkeypatch, capsys):
    d = a_sweep(tmp_path / "sweep")
    write(d, "more/torch__Acrobot-v1__s__seed1.json", record("overall", "torch", "Acrobot-v1", "s", 1, total=1, iteration=0.1))
    (d / "cut.json").symlink_to(d / "gone.json")  # a record that cannot be read (a link to a file gone)
    before = listing(d)
    unlistable(monkeypatch, d / "more")
    assert plot.main([str(d)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: cannot read ") and str(d / "more") in line and str(d / "cut.json") in line
    monkeypatch.undo()
    assert listing(d) == before


def test_report_front_refuses_a_source_it_cannot_read_whole(tmp_path, monkeypatch, capsys):
    names = sorted({name for column in front.COLUMNS for name in column.sources})
    for name in names:
        (tmp_path / name / "records" / "overall").mkdir(parents=True)
    unlistable(monkeypatch, tmp_path / names[0] / "records" / "overall")
    out = tmp_path / "answer"
    assert front.main(["--records", str(tmp_path), "--out", str(out)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: cannot read ") and names[0] in line
    assert not out.exists()


def test_report_front_checks_its_readme_before_the_work(tmp_path, capsys):
    page = tmp_path / "page.md"
    page.write_text("<!-- answer.md -->\n\n<!-- end of answer.md -->\n")
    page.chmod(0o444)
    with pytest.raises(SystemExit) as exited:
        front.main(["--records", str(tmp_path / "none"), "--out", str(tmp_path / "answer"), "--readme", str(page)])
    assert exited.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"error: --readme {page} cannot be written: {page} is read-only"
    assert listing(tmp_path) == ["page.md"]


def test_plot_skips_a_record_without_iterations_by_name_and_never_reads_its_own_summary(tmp_path, capsys):
    d = a_sweep(tmp_path / "sweep")
    empty = record("overall", "torch", "CartPole-v1", "s", 3, total=1, iteration=0.1)
    empty["iteration_durations"] = []
    write(d, "overall/torch__CartPole-v1__s__seed3.json", empty)
    assert plot.main([str(d)]) == 0
    err = capsys.readouterr().err
    assert "torch__CartPole-v1__s__seed3.json: incomplete: no iteration in 'iteration_durations'; skipped" in err
    assert plot.main([str(d)]) == 0  # again, with its summary.json in the directory
    assert "summary.json" not in capsys.readouterr().err


def test_a_report_that_fails_part_way_leaves_the_previous_one_whole(tmp_path, monkeypatch):
    d = a_sweep(tmp_path / "sweep")
    assert plot.main([str(d)]) == 0
    before = {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}
    assert "summary.md" in before and "duration.png" in before

    def fails(*args, **kwargs):
        raise KeyboardInterrupt  # a Ctrl-C, or a crash, while the figures are made

    monkeypatch.setattr(timing_figures, "draw", fails)
    write(
        d,
        "overall/jax_linen__CartPole-v1__s__seed3.json",
        record("overall", "jax_linen", "CartPole-v1", "s", 3, total=5, iteration=0.05),
    )
    with pytest.raises(KeyboardInterrupt):
        plot.main([str(d)])
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()} == before
    assert not [p for p in d.iterdir() if p.name.startswith(".tmp")]


# --------------------------------------------------------------- one rule for every output path
def test_the_tools_output_rule(tmp_path, monkeypatch):
    """An empty path, a file's name with a trailing slash (absent or a file), a read-only file: refused, with the
    reason; a new file in a new directory, or a writable one, passes. The scripts' --json-out keeps the same rule
    (tests/test_contract.py)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "kept.json").write_text("{}")
    (tmp_path / "kept.json").chmod(0o444)
    problem = outputs.out_problem
    assert problem("") == "the path is empty"
    assert problem("new/") == "new/ names a directory; name a file"
    assert problem("notes.txt/") == "notes.txt/ names a directory; name a file"
    assert problem("kept.json") == f"{tmp_path / 'kept.json'} is read-only"
    assert problem("new/deeper/x.json") == problem("notes.txt") == problem("new/", directory=True) == ""
    assert listing(tmp_path) == ["kept.json", "notes.txt"]


@pytest.mark.parametrize("tool", ["bench/env_cost.py", "bench/host_cost.py"])
@pytest.mark.parametrize("out", ["", "missing/", "notes.txt/"])
def test_the_measuring_tools_check_their_out_before_measuring(tool, out, tmp_path):
    (tmp_path / "notes.txt").write_text("")
    proc = subprocess.run(
        [sys.executable, str(ROOT / tool), "--out", out, "CartPole-v1"], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stdout == ""
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("error: --out ") and "cannot be written: " in line
    assert listing(tmp_path) == ["notes.txt"]


def measure_into_broken_files(directory):
    """bench/env_cost.py and bench/host_cost.py (the floor alone), each given an --out that does not parse and one that is not an object."""
    results = []
    for tool, small in (
        ("bench/env_cost.py", ["--num-envs", "2", "--steps", "5", "--calls", "3"]),
        ("bench/host_cost.py", ["--num-envs", "2", "--num-steps", "4", "--iterations", "2", "--no-calls", "--no-cuda"]),
    ):
        for text in ('{"num_envs": 2, "en', "[1, 2]"):
            out = directory / f"{len(results)}.json"
            out.write_text(text)
            proc = subprocess.run(
                [sys.executable, str(ROOT / tool), *small, "--out", str(out), "CartPole-v1"],
                capture_output=True,
                text=True,
                timeout=300,
            )
            results.append((tool, proc, json.loads(out.read_text()) if proc.returncode == 0 else None))
    return results


@in_background(measure_into_broken_files)
def test_a_measurement_file_that_cannot_be_read_is_measured_again_with_a_warning(background):
    for tool, proc, made in background:
        assert proc.returncode == 0, (tool, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr and "cannot be read" in proc.stderr and "measured again" in proc.stderr
        assert made["num_envs"] == 2 and "CartPole-v1" in made["envs"]


def test_a_failure_record_has_an_ok_records_mode_and_a_failed_write_leaves_nothing(tmp_path):
    (tmp_path / "stderr").write_text("Traceback\nRuntimeError: boom\n")
    command = [
        "python",
        "ppo_torch.py",
        "--env-id",
        "CartPole-v1",
        "--hidden",
        "64,64",
        "--seed",
        "1",
        "--exp-name",
        "overall",
    ]
    path = tmp_path / "run.json"
    write_failure(str(path), "crash", "1", "3", "300", str(tmp_path / "stderr"), *command)
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as the scripts write theirs, not mkstemp's 0600
    assert json.loads(path.read_text())["reason"] == "crash"
    (tmp_path / "dir.json").mkdir()  # the rename onto it fails, after the text is written
    with pytest.raises(OSError):
        write_failure(str(tmp_path / "dir.json"), "crash", "1", "3", "300", str(tmp_path / "stderr"), *command)
    assert listing(tmp_path) == ["dir.json", "run.json", "stderr"]


def test_an_unknown_environment_is_answered_with_the_ids_a_variant_can_train():
    message = load_script.load("bench/env_cost.py", "benchback_guards_env_cost").bad_env(["NoSuchEnv-v0"])
    ids = message.split("; ids: ")[1].split(", ")
    assert {"CartPole-v1", "Craftax-Classic-Symbolic-v1", "Pendulum-v1", "MountainCarContinuous-v0"} <= set(ids)
    assert "MNISTBandit-bsuite" not in ids  # it downloads MNIST when built
