"""studies/search.py: Optuna's search one trial at a time, in workers or in batches, resumed from its SQLite storage;
bad input refused."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import DECLARED, ROOT


def search(*flags):
    return subprocess.run([sys.executable, "-m", "studies.search", *flags], cwd=ROOT, capture_output=True, text=True)


@pytest.mark.parametrize(
    "flags, said",
    [
        (["--algorithm", "sac"], "--algorithm must be one of ppo, dqn"),
        (["--variant", "jax_flax"], "--variant must be one of"),
        (["--trials", "0"], "--trials must be at least 1"),
        (["--params", "learning_rate,momentum"], "--params: momentum not among"),
        (["--workers", "0"], "--workers must be at least 1"),
        (["--batch", "0"], "--batch must be at least 1"),
        (["--batch", "2", "--variant", "torch"], "--batch: torch trains one configuration at a time"),
        (["--batch", "2", "--workers", "2"], "--batch and --workers do not combine"),
    ],
)
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(tmp_path, flags, said):
    out = tmp_path / "study"
    done = search(*flags, "--out", str(out))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and said in lines[0], done.stderr
    assert not out.exists()


def test_a_storage_it_cannot_write_is_refused_before_any_trial(tmp_path):
    (tmp_path / "file").write_text("")
    done = search("--out", str(tmp_path / "file" / "study"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1 and "is a file" in done.stderr


@pytest.mark.slow  # three PPO trainings of two iterations, each compiling: about a minute on 2 cores
def test_a_search_resumes_where_it_stopped_with_the_trials_it_had(tmp_path):
    out = tmp_path / "study"
    flags = ["--variant", "jax_linen", "--total-timesteps", "16384", "--out", str(out)]
    first = search(*flags, "--trials", "2")
    assert first.returncode == 0, first.stderr
    made = {p.name: p.read_text() for p in (out / "trials").glob("*.json")}
    assert sorted(made) == ["trial-0000.json", "trial-0001.json"] and (out / "study.db").exists()
    again = search(*flags, "--trials", "3")
    assert again.returncode == 0 and "resuming" in again.stdout and "2 of 3 trials completed" in again.stdout
    now = {p.name: p.read_text() for p in (out / "trials").glob("*.json")}
    assert len(now) == 3 and all(now[name] == text for name, text in made.items())  # the first two kept as they were
    summary = json.loads((out / "search.json").read_text())
    assert summary["completed"] == 3 and [r["trial"] for r in summary["trials"]] == [0, 1, 2]
    params = [json.loads(text)["search"]["params"] for text in now.values()]
    assert len({p["learning_rate"] for p in params}) == 3  # TPE suggested three configurations, not one three times


@pytest.mark.slow  # four PPO trainings of two iterations in two processes, each compiling: about a minute on 2 cores
def test_workers_share_one_study_until_it_holds_the_trials_asked_for(tmp_path):
    out = tmp_path / "study"
    flags = ["--variant", "jax_linen", "--total-timesteps", "16384", "--out", str(out), "--workers", "2"]
    done = search(*flags, "--trials", "3")
    assert done.returncode == 0, done.stderr
    trials = [json.loads(p.read_text())["search"] for p in sorted((out / "trials").glob("*.json"))]
    assert 3 <= len(trials) <= 4  # the last trial in flight in the other worker may end after the third
    assert {t["worker"] for t in trials} == {0, 1}  # both trained
    assert len({t["params"]["learning_rate"] for t in trials}) == len(trials)  # their samplers drew apart
    summary = json.loads((out / "search.json").read_text())
    assert summary["completed"] == len(trials)


@pytest.mark.slow  # three batches of two PPO trainings of two iterations, each batch compiling once: about 40 s
def test_a_batched_search_trains_whole_batches_and_resumes(tmp_path):
    out = tmp_path / "study"
    flags = ["--variant", "jax_linen", "--total-timesteps", "16384", "--out", str(out), "--batch", "2"]
    first = search(*flags, "--trials", "3")  # two batches: the last one whole
    assert first.returncode == 0, first.stderr
    assert sorted(p.name for p in (out / "trials").glob("*.json")) == ["batch-0000.json", "batch-0002.json"]
    again = search(*flags, "--trials", "6")
    assert again.returncode == 0 and "4 of 6 trials completed" in again.stdout, again.stdout
    summary = json.loads((out / "search.json").read_text())
    assert summary["completed"] == 6 and [r["batch"] for r in summary["trials"]] == [0, 0, 2, 2, 4, 4]
    record = json.loads((out / "trials" / "batch-0004.json").read_text())
    rows = {r["trial"]: r for r in summary["trials"]}
    for trial, config, value in zip(record["search"]["trials"], record["configs"], record["final_return"]):
        assert rows[trial]["value"] == value and all(rows[trial][k] == v for k, v in config.items())
    assert len({r["learning_rate"] for r in summary["trials"]}) == 6  # the constant liar spread each batch out


@pytest.mark.parametrize(
    "cores, workers, masks",
    [([0, 1, 2, 3], 2, [[0, 1], [2, 3]]), ([0, 1], 2, [[0], [1]]), ([0, 1], 3, [[0], [1], [0]]), ([4, 5], 1, [[4, 5]])],
)
def test_each_worker_is_given_its_share_of_the_cores(monkeypatch, cores, workers, masks):
    from studies import search as study

    given = []
    monkeypatch.setattr(study.os, "sched_getaffinity", lambda pid: set(cores))
    monkeypatch.setattr(study.os, "sched_setaffinity", lambda pid, mask: given.append(list(mask)))
    for k in range(workers):
        study.pin(k, workers)
    assert given == masks


def test_the_search_presets_batches_are_the_configurations_drawn_from_the_space():
    from studies import search as study

    for algorithm in ("ppo", "dqn"):
        for n in (8, 64):
            assert json.loads(study.configs_file(algorithm, n).read_text()) == study.drawn(algorithm, n)
        assert study.drawn(algorithm, 64)[:8] == study.drawn(algorithm, 8)  # a batch of 8 is the first 8 of 64
    # DQN's target period: whole groups of train_frequency's 10 steps, as its scripts require
    assert {c["target_network_frequency"] % 10 for c in study.drawn("dqn", 64)} == {0}


def dry_run(preset: str, tmp_path):
    """benchmark.sh's plan of the preset, nothing run."""
    proc = subprocess.run(
        ["bash", str(ROOT / "benchmark.sh"), "--preset", preset, "--dry-run", "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def test_the_search_preset_runs_each_batch_where_a_script_takes_it_beside_one_configuration_of_every_variant(tmp_path):
    proc = dry_run("search", tmp_path)
    runs = re.findall(r"\] to-run search/([\w+]+)__CartPole-v1__s__k(\d+)__seed(\d+) (.*)", proc.stdout)
    assert runs and re.search(rf"preset search, {len(runs)} runs", proc.stdout)
    timing = [v for v in DECLARED if v != "linen_nojit"]
    takes = [v for v in timing if DECLARED[v].configs]
    assert sorted(takes) == ["jax_equinox", "jax_linen", "jax_nnx"]
    for seed in map(str, range(1, 6)):
        for k in (1, 8, 64):
            block = [(v, flags) for v, n, s, flags in runs if (int(n), s) == (k, seed)]
            assert sorted(v for v, _ in block) == sorted(timing if k == 1 else takes), (k, seed)
            assert all(("--configs" in flags) == (k > 1) for _, flags in block)
            assert all(
                f"ppo-CartPole-v1-{k:03d}.json" in flags and "--total-timesteps 204800" in flags for _, flags in block if k > 1
            )


def test_the_dqn_search_preset_runs_each_batch_where_a_script_takes_it_beside_one_configuration_of_every_variant(
    tmp_path,
):
    proc = dry_run("search-dqn", tmp_path)
    runs = re.findall(r"\] to-run search/([\w+]+)__FourRooms-misc__d__k(\d+)__seed(\d+) (.*)", proc.stdout)
    assert runs and re.search(rf"preset search-dqn, {len(runs)} runs", proc.stdout)
    every = ["jax_equinox", "jax_linen", "jax_nnx", "torch", "torch_compile"]
    for seed in map(str, range(1, 6)):
        for k in (1, 8, 64):
            block = [(v, flags) for v, n, s, flags in runs if (int(n), s) == (k, seed)]
            assert sorted(v for v, _ in block) == (every if k == 1 else every[:3]), (k, seed)
            assert all("--total-timesteps 100000" in flags for _, flags in block)
            assert all((f"dqn-FourRooms-misc-{k:03d}.json" in flags) == (k > 1) for _, flags in block)


def test_a_batch_record_from_a_checkout_at_another_path_counts_done_and_one_of_other_configurations_does_not():
    """The preset's --configs is a path into the checkout that plans it: the committed records name another one's."""
    from bench.plan import load as load_plan
    from bench.run_records import other_settings

    (run,) = [
        r
        for r in load_plan(["--preset", "search-dqn", "--out", "/nonexistent/out"]).runs
        if r.name == "search/jax_linen__FourRooms-misc__d__k008__seed1"
    ]
    path = ROOT / "results/speed/search-dqn-cpu-xeon/records" / f"{run.name}.json"
    record = json.loads(path.read_text())
    assert record["args"]["configs"] != dict(zip(run.flags.split(), run.flags.split()[1:]))["--configs"]
    assert other_settings(record, run) == ""
    record["configs"][0]["gamma"] = 0.5
    assert other_settings(record, run).startswith("--configs:")
