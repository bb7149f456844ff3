"""report.front, the front page's answer: on synthetic sweeps whose ratios are known, each cell is the ratio of its
first source that gives it an interval; and on the committed records, README.md's table is the one it makes."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from report import front
from test_plot import record, write  # a schema-1 record whose steady iteration is its `iteration`

ENVS = ["CartPole-v1", "Acrobot-v1", "Breakout-MinAtar"]


def sweep(directory, variants: dict, envs=ENVS, seeds=(1, 2, 3), device="cpu", model="EPYC"):
    """Overall runs at size s: {variant: steady seconds}, jax_linen's included, in every (env, seed) block."""
    for env in envs:
        for seed in seeds:
            for variant, seconds in variants.items():
                r = record("overall", variant, env, "s", seed, total=30 * seconds, iteration=seconds)
                r.update(schema_version=2, device=device, cpu={"model": model, "cores": 2}, peak_host_memory_mb=1.0)
                if variant.endswith("+graphs"):
                    r["variant"], r["args"]["cuda_graphs"] = "torch_compile", True
                write(directory, f"records/overall/{variant}__{env}__s__seed{seed}.json", r)


@pytest.fixture
def columns(monkeypatch):
    chosen = (
        front.Column("size s", "s", ("torch-sweep", "nojit-sweep")),
        front.Column("CartPole-v1, size s", "s", ("gpu-sweep",), env="CartPole-v1"),
    )
    monkeypatch.setattr(front, "COLUMNS", chosen)
    monkeypatch.setattr(front, "FIRST", chosen[0])
    return chosen


def make(tmp_path):
    # torch-sweep timed linen_nojit in two blocks only (no interval): its cell must come from nojit-sweep's three
    sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "torch": 0.6})
    sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "linen_nojit": 4.0}, envs=["CartPole-v1"], seeds=(1, 2))
    sweep(tmp_path / "nojit-sweep", {"jax_linen": 0.1, "linen_nojit": 5.0}, envs=["CartPole-v1"])
    sweep(tmp_path / "gpu-sweep", {"jax_linen": 0.02, "torch_compile+graphs": 0.36}, device="NVIDIA Z", envs=ENVS[:2])
    return front.answer_columns(front.load(tmp_path))


def cells(markdown: str) -> dict:
    lines = [line.strip("|").split(" | ") for line in markdown.splitlines() if line.startswith("| ")]
    head, rows = lines[0], lines[1:]
    return {(row[0].strip(), column.strip()): cell.strip() for row in rows for column, cell in zip(head, row)}


def test_each_cell_is_its_first_sources_ratio_with_an_interval(tmp_path, columns):
    table = cells(front.markdown(make(tmp_path)))
    s, gpu = "size s, 3 gymnax environments", "GPU (NVIDIA Z): CartPole-v1, size s"
    assert table["jax_linen", s] == "1 (0.20 s an iteration)"
    assert table["torch", s] == "3.00 [3.00, 3.00]"
    assert table["linen_nojit", s] == "50.0 [50.0, 50.0] (1 environment)"  # nojit-sweep's 5.0 / 0.1, not 4.0 / 0.2
    assert table["torch_compile+graphs", gpu] == "18.0 [18.0, 18.0]"  # CartPole-v1's blocks alone
    assert table["torch_compile+graphs", s] == "needs a GPU"
    assert table["torch", gpu] == "not run"
    assert table["jax_linen", gpu] == "1 (20 ms an iteration)"
    assert table["linen_nojit", "iteration 0 at s (compilation)"] == "150 s"  # 30x its steady iteration, its cell's runs
    assert table["torch", "peak memory at s"] == "1.0 MiB"
    assert table["torch_compile+graphs", "peak memory at s"] == "needs a GPU"


def test_a_column_holds_the_environments_it_names_and_counts_those(tmp_path, columns):
    """Continuous-action runs in a source of a size's column (Pendulum-v1, written into the same records) are not of
    the column's environments: neither its count nor its ratios move."""
    make(tmp_path)
    sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "torch": 1.2}, envs=["Pendulum-v1"])
    table = cells(front.markdown(front.answer_columns(front.load(tmp_path))))
    assert table["torch", "size s, 3 gymnax environments"] == "3.00 [3.00, 3.00]"
    assert not [column for _, column in table if "4 gymnax" in column]


def test_a_base_source_gives_linens_seconds_and_every_per_run_statistic_from_one_machine(tmp_path, monkeypatch):
    """A column whose JAX cells come from a later sweep on another machine: their ratios from it, but Linen's seconds
    and every variant's iteration 0 from the base sweep, where torch's are (one machine's compile times side by side)."""
    chosen = (front.Column("size s", "s", ("jax-sweep", "torch-sweep"), base="torch-sweep"),)
    monkeypatch.setattr(front, "COLUMNS", chosen)
    monkeypatch.setattr(front, "FIRST", chosen[0])
    sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "jax_nnx": 0.2, "torch": 0.6})
    sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "jax_equinox": 0.3}, envs=["CartPole-v1"], seeds=(1, 2))
    sweep(tmp_path / "jax-sweep", {"jax_linen": 0.1, "jax_nnx": 0.12, "jax_equinox": 0.15}, model="EPYC 2")
    table = cells(front.markdown(front.answer_columns(front.load(tmp_path))))
    s, zero = "size s, 3 gymnax environments", "iteration 0 at s (compilation)"
    assert table["jax_linen", s] == "1 (0.20 s an iteration)"  # the base sweep's Linen, not jax-sweep's 0.1 s
    assert table["jax_nnx", s] == "1.20 [1.20, 1.20]" and table["torch", s] == "3.00 [3.00, 3.00]"
    assert table["jax_nnx", zero] == "6.0 s"  # 30x its steady iteration in the base sweep (jax-sweep's: 3.6 s)
    assert table["jax_equinox", zero] == "9.0 s"  # the base sweep ran it too, on one environment
    assert table["jax_linen", zero] == "6.0 s" and table["torch", zero] == "18 s"


def test_the_command_writes_the_table_and_the_figure_and_the_readmes_copy(tmp_path, columns):
    result = make(tmp_path)
    page = tmp_path / "README.md"
    page.write_text("# a page\n\n<!-- answer.md: made here -->\n\nold\n<!-- end of answer.md -->\n")
    assert front.main(["--records", str(tmp_path), "--out", str(tmp_path / "answer"), "--readme", str(page)]) == 0
    # each copy links the reports from where it lies
    made = front.markdown(result, "../")
    assert (tmp_path / "answer" / "answer.md").read_text() == made
    assert "[torch-sweep](../torch-sweep/report/summary.md)" in made
    assert (tmp_path / "answer" / "answer.png").read_bytes().startswith(b"\x89PNG")
    copy = front.markdown(result, "./", sources=False)  # the page's: one link to answer.md for where each column comes from
    assert copy in page.read_text() and "old" not in page.read_text()
    assert "[answer.md](./answer/answer.md)" in copy and "[torch-sweep]" not in copy


@pytest.mark.parametrize("split", ["by seed", "by variant"])
def test_a_column_whose_source_mixes_machines_is_refused(tmp_path, columns, split):
    """No ratio across machines: neither where some blocks ran elsewhere, nor where a variant ran elsewhere than the
    reference in the same blocks (each variant on one machine, but not the same one)."""
    if split == "by seed":
        sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "torch": 0.6}, seeds=(1, 2))
        sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2, "torch": 0.6}, seeds=(3,), model="another")
    else:
        sweep(tmp_path / "torch-sweep", {"jax_linen": 0.2})
        sweep(tmp_path / "torch-sweep", {"torch": 0.6}, model="another")
    for name in ("nojit-sweep", "gpu-sweep"):
        sweep(tmp_path / name, {"jax_linen": 0.1})
    with pytest.raises(front.FrontError, match="torch-sweep: .* 2 machines"):
        front.answer_columns(front.load(tmp_path))


def test_every_source_and_page_it_cannot_read_is_named_in_one_refusal(tmp_path, columns, monkeypatch, capsys):
    """A folder of one source, a file of another, a third's folder and the page: all named in the one line, not the
    first alone, and nothing written."""
    from test_guards import unlistable  # os.scandir failing on a folder, as without read permission

    make(tmp_path)
    (tmp_path / "nojit-sweep" / "records" / "cut.json").symlink_to(tmp_path / "gone.json")  # a file that cannot be read
    folders = [tmp_path / name / "records" / "overall" for name in ("torch-sweep", "gpu-sweep")]
    for folder in folders:
        unlistable(monkeypatch, folder)
    page = tmp_path / "page.md"
    page.write_text("<!-- answer.md -->\n\n<!-- end of answer.md -->\n")
    read_text = Path.read_text
    monkeypatch.setattr(Path, "read_text", lambda path, *a, **k: denied(path) if path == page else read_text(path, *a, **k))
    out = tmp_path / "answer"
    assert front.main(["--records", str(tmp_path), "--out", str(out), "--readme", str(page)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: cannot read ")
    for unread in (*folders, tmp_path / "nojit-sweep" / "records" / "cut.json"):
        assert str(unread) in line
    assert f"cannot read --readme {page} (Permission denied)" in line
    assert not out.exists() and read_text(page) == "<!-- answer.md -->\n\n<!-- end of answer.md -->\n"


def test_a_record_that_does_not_parse_is_named_and_nothing_written(tmp_path, columns, capsys):
    """A merge conflict's marker in one record: the answer would be made without it, its numbers moved in silence."""
    make(tmp_path)
    broken = tmp_path / "torch-sweep" / "records" / "overall" / "torch__Acrobot-v1__s__seed2.json"
    broken.write_text("<<<<<<< HEAD\n" + broken.read_text())
    out = tmp_path / "answer"
    assert front.main(["--records", str(tmp_path), "--out", str(out)]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert f"{broken}: does not parse" in line, line
    assert not out.exists()


def denied(path):
    raise PermissionError(13, "Permission denied", str(path))


def test_a_failure_part_way_leaves_the_previous_answer_and_page_whole(tmp_path, columns, monkeypatch):
    """answer.md, answer.png and the page's copy are made apart and moved in once all are made: a Ctrl-C (or a crash)
    while the figure is drawn leaves the previous three as they were, nothing half made, no temporary file, and no
    output folder where there was none."""
    from report import figures

    make(tmp_path)
    out, page = tmp_path / "answer", tmp_path / "README.md"
    out.mkdir()
    previous = {out / "answer.md": b"previous table\n", out / "answer.png": b"previous figure"}
    previous[page] = b"<!-- answer.md -->\n\nprevious copy\n<!-- end of answer.md -->\n"
    for path, content in previous.items():
        path.write_bytes(content)

    def fails(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(figures, "front", fails)
    for where in (out, tmp_path / "new" / "answer"):
        with pytest.raises(KeyboardInterrupt):
            front.main(["--records", str(tmp_path), "--out", str(where), "--readme", str(page)])
    assert {path: path.read_bytes() for path in previous} == previous
    assert sorted(p.name for p in out.iterdir()) == ["answer.md", "answer.png"]
    assert not list(tmp_path.glob(".tmp-*")) and not (tmp_path / "new").exists()


def front_command(*flags, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "report.front", *flags], cwd=cwd, capture_output=True, text=True)


def test_a_missing_source_is_one_line_and_exit_2_writing_nothing(tmp_path):
    proc = front_command("--records", str(tmp_path), "--out", str(tmp_path / "answer"))
    assert proc.returncode == 2
    assert re.fullmatch(r"error: no records directory \S+ \(every column's source must be there\)\n", proc.stderr)
    assert list(tmp_path.iterdir()) == []


def test_a_page_without_the_markers_is_refused_before_anything_is_written(tmp_path, columns):
    make(tmp_path)  # (the columns fixture applies to this process only: the command reads the committed records)
    page = tmp_path / "page.md"
    page.write_text("# a page\n\nno table here\n")
    proc = front_command("--out", str(tmp_path / "answer"), "--readme", str(page))
    assert proc.returncode == 2 and proc.stderr.startswith("error: no <!-- answer.md") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "answer").exists() and page.read_text() == "# a page\n\nno table here\n"
    marked = "# a page\n\n<!-- answer.md: made here -->\n\nold\n<!-- end of answer.md -->\nafter\n"
    assert front.with_copy(marked, "new\n") == marked.replace("old\n", "new\n\n")  # a blank line before the end


def test_the_readme_shows_the_table_the_committed_records_make():
    """README.md's answer table and the lines under it are answer.md as report.front makes it from the committed
    records today, and so is results/answer/answer.md: a number copied wrong, or left behind when a sweep is added
    or remade, fails here."""
    result = front.answer_columns(front.load(ROOT / "results"))
    rerun = "rerun: python -m report.front --readme README.md"
    assert (ROOT / "results" / "answer" / "answer.md").read_text() == front.markdown(result, "../"), rerun
    readme = (ROOT / "README.md").read_text()
    assert front.with_copy(readme, front.markdown(result, "results/", sources=False)) == readme, rerun


def test_the_readme_shows_the_off_policy_table_the_committed_sac_records_make():
    """README.md's off-policy table is offpolicy.md's timing table as report.front makes it from the committed SAC sets
    (report.offpolicy)."""
    rerun = "rerun: python -m report.front --readme README.md"
    readme = (ROOT / "README.md").read_text()
    made = front.offpolicy_table(front.offpolicy_summary(ROOT / "results", readme, learning=False), "results/", False)
    assert "jax_linen" in made and "IQM" not in made
    assert front.with_copy(readme, made, front.SAC_MARKERS, "offpolicy.md") == readme, rerun


@pytest.mark.slow  # the learning statistics' bootstraps: most of a minute on 2 cores
def test_the_off_policy_page_is_what_the_committed_sac_records_make():
    """results/answer/offpolicy.md, the README table's whole page, learning too."""
    whole = front.offpolicy_table(front.offpolicy_summary(ROOT / "results", None), "../")
    assert "IQM" in whole and (ROOT / "results" / "answer" / "offpolicy.md").read_text() == whole, (
        "rerun: python -m report.front --readme README.md"
    )


def test_the_search_page_is_what_the_committed_search_records_make():
    """results/answer/search.md, which the README links, is what report.front makes from the committed search set
    (report.search); a page with its markers gets the same table (below)."""
    made = front.search_table(ROOT / "results", None, "../")
    assert "| jax_linen |" in made and (ROOT / "results" / "answer" / "search.md").read_text() == made, (
        "rerun: python -m report.front --readme README.md"
    )


def test_a_page_with_the_search_markers_gets_the_search_table(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- answer.md: x -->\n\n<!-- end of answer.md -->\n<!-- search.md: x -->\n\n<!-- end of search.md -->\n")
    made = front.search_table(ROOT / "results", page.read_text(), "results/")
    copied = front.with_copy(page.read_text(), made, front.SEARCH_MARKERS, "search.md")
    assert copied.count("| jax_linen |") == len(front.SEARCH_SOURCES) == 2  # PPO's table and DQN's


def test_a_page_with_a_place_for_the_search_table_and_no_search_set_is_refused(tmp_path):
    page = "<!-- search.md: made here -->\n\n<!-- end of search.md -->\n"
    with pytest.raises(front.FrontError, match="a search table's source"):
        front.search_table(tmp_path, page, "results/")
    assert front.search_table(tmp_path, None, "results/") is None  # no set and no place: nothing to make
