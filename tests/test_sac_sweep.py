"""The SAC presets (bench/presets.py: sac, sac-learn): their plans, what a resumed SAC sweep counts done, and the
off-policy report (report.offpolicy, plot.py) from records made as the scripts make theirs: their Args parsed from the
plan's command line by the script's own dataclass and tyro (tests/fixtures/script_args.py), without running them."""

import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from bench.plan import load as load_plan
from bench.plan_args import Refused
from bench.plan_runs import block_of
from bench.presets import SAC_CELLS, TD3_CELLS
from bench.run_records import read_status
from conftest import ROOT
from fixtures.script_args import parsed_args
from report import offpolicy
from report.records import load_runs
from test_resume import command


@pytest.fixture(autouse=True)
def _few_resamples(few_resamples):
    """Every test here reads made-up records (or committed ones it compares with themselves): the reports' bootstraps at
    a tenth of their resamples (conftest's few_resamples)."""


FRAMEWORKS = ("jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile")
SCRIPTS = {f"sac_{v}.py" for v in FRAMEWORKS}


def plan(*flags):
    return load_plan([*flags, "--out", "/nonexistent/out"])


def iterations(args: dict) -> int:
    """The iterations a SAC script runs for these args, as its train() counts them."""
    random_steps = -(-args["learning_starts"] // args["num_envs"])
    return (args["total_timesteps"] - random_steps * args["num_envs"]) // (args["num_envs"] * args["steps_per_iteration"])


def record_of(run, steady: float = 1.0, final_return=None) -> dict:
    """The ok record a SAC (or TD3) script writes when given the plan's command, complete enough for plot.py to read."""
    args = parsed_args(ROOT / run.script, command(run))
    algorithm = Path(run.script).stem.split("_", 1)[0]
    n = iterations(args)
    return {
        "schema_version": 2,
        "status": "ok",
        "algorithm": algorithm,
        "variant": Path(run.script).stem.removeprefix(f"{algorithm}_"),
        "env_id": args["env_id"],
        "env_backend": args.get("env_backend", "gymnax"),
        "hidden": [int(h) for h in args["hidden"].split(",")],
        "seed": args["seed"],
        "args": args,
        "device": "cpu",
        "cpu": {"model": "test CPU"},
        "versions": {"python": "3.11"},
        "sync_timing": False,
        "env_steps": args["total_timesteps"],
        "setup_duration": 1.0,
        "iteration_durations": [5.0] + [steady] * (n - 1),
        "total_duration": 5.0 + steady * (n - 1),
        "compiles_after_first_iteration": 0,
        "episodic_return": [final_return] * n,
        "final_return": final_return,
        "peak_host_memory_mb": 500.0,
    }


# TD3's with -m slow: its plan is SAC's with fewer cells (bench/presets.py)
@pytest.mark.parametrize("preset, cells", [("sac", SAC_CELLS), pytest.param("td3", TD3_CELLS, marks=pytest.mark.slow)])
def test_an_off_policy_preset_runs_every_script_of_its_algorithm_in_whole_blocks_of_each_cell(preset, cells):
    made = plan("--preset", preset)
    blocks = defaultdict(set)
    for run in made.runs:
        blocks[block_of(run)].add(run.variant)
        args = parsed_args(ROOT / run.script, command(run))
        assert iterations(args) == made.p["iterations"], run.name  # the total the plan gives makes whole iterations
        assert f"__n{args['num_envs']:04d}__u{args['updates_per_step']}__" in run.name
    assert {run.script for run in made.runs} == {f"{preset}_{v}.py" for v in FRAMEWORKS}
    scripts = {v.name for v in made.variants if not v.setting_of}
    found = defaultdict(int)
    for (_, rest), variants in blocks.items():
        assert scripts <= variants, rest  # every script in every block: each ratio has its pair
        found[rest.rsplit("__seed", 1)[0]] += 1
    expected = {}
    for env, size, num_envs, utd, _, repeats, stacked, full in cells:
        cell = f"{env}__{size}__n{num_envs:04d}__u{utd}{'__full' * full}"
        expected[cell] = repeats or made.p["repeats"]
        stacks = {v for (_, rest), vs in blocks.items() if rest.startswith(cell + "__") for v in vs} - scripts
        assert stacks == {f"{script}+{tag}" for script in ("torch", "torch_compile") for tag in stacked}, cell
    assert dict(found) == expected  # the preset's cells, each in its blocks, and no other


def test_the_sac_presets_are_narrowed_by_the_options_and_refuse_what_they_cannot_run():
    runs = plan("--preset", "sac", "--variants", "torch", "--sizes", "c").runs
    assert runs and {r.script for r in runs} == {"sac_torch.py"} and {r.size for r in runs} == {"c"}
    with pytest.raises(Refused, match="nothing to run"):
        plan("--preset", "sac", "--envs", "CartPole-v1")
    learn = plan("--preset", "sac-learn").runs
    assert len(learn) == 10 * len(SCRIPTS) and {r.env for r in learn} == {"Pendulum-v1"}


def test_a_resumed_sac_sweep_counts_a_record_done_only_if_made_as_planned(tmp_path):
    run = plan("--preset", "sac").runs[0]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record_of(run)))
    assert read_status(str(path), run) == ("ok", "")
    other = plan("--preset", "sac", "--iterations", "3").runs[0]
    status, why = read_status(str(path), other)
    assert status == "stale" and "--total-timesteps" in why


@pytest.mark.slow  # the learning statistics' bootstraps: 25 s on 2 cores
def test_the_off_policy_report_gives_each_cells_ratio_and_the_learning(tmp_path):
    made = plan("--preset", "sac", "--envs", "Pendulum-v1", "--sizes", "s", "--repeats", "3")
    for run in made.runs:  # torch twice Linen's time in every cell, the others equal to it
        record = record_of(run, steady=2.0 if run.variant == "torch" else 1.0)
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    for run in plan("--preset", "sac-learn").runs:
        record = record_of(run, final_return=-150.0 - run.seed - 100 * (run.variant == "torch"))
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    runs, failures = load_runs(tmp_path)
    assert not failures
    s = offpolicy.summary(runs)
    rows = {(r["cell"], r["variant"]): r for r in s["timing"]}
    cells = {r["cell"] for r in s["timing"]}
    # 1 env UTD 1, UTD 0, full buffer, 16 envs, UTD 8: told apart though they share env, size and num_envs pairs
    assert len(cells) == 5
    for cell in cells:
        assert rows[cell, "torch"]["ratio"] == pytest.approx(2.0) and rows[cell, "torch"]["n_blocks"] == 3
        assert rows[cell, "jax_nnx"]["ratio"] == pytest.approx(1.0)
    (section,) = s["learning"]
    learned = {r["variant"]: r for r in section["rows"]}
    assert learned["torch"]["iqm"] < learned["jax_linen"]["iqm"] - 90
    assert learned["torch"]["verdict"] == "learns worse than the reference"
    assert learned["jax_nnx"]["verdict"] == "learns like the reference"
    text = offpolicy.markdown(s)
    assert "Pendulum-v1, s (64x64), 16 envs, UTD 1" in text and "2.00" in text


def test_which_environments_sac_learns_is_told_from_each_runs_gain_over_its_random_steps(tmp_path):
    made = plan("--preset", "sac-envs")
    assert {r.variant for r in made.runs} == {"jax_linen", "jax_nnx", "torch"} and len(made.runs) == 3 * 5 * 4
    for run in made.runs:
        args = parsed_args(ROOT / run.script, command(run))
        assert (args["total_timesteps"], args["learning_starts"]) == (50000, 5000)
        # Reacher-misc learns; PointRobot-misc's final returns straddle its random ones; MountainCarContinuous-v0
        # beats its random steps but stays under its bar; Swimmer-misc's ends below them
        random = {"Reacher-misc": 10.0, "PointRobot-misc": 0.2, "MountainCarContinuous-v0": -30.0}.get(run.env, 80.0)
        final = {"Reacher-misc": 50.0 + run.seed, "PointRobot-misc": 0.2 + 0.01 * (-1) ** run.seed}.get(run.env)
        final = final if final is not None else {"MountainCarContinuous-v0": -1.0}.get(run.env, 40.0)
        record = record_of(run, final_return=final) | {"random_episodes": 10, "random_return": random}
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    runs, failures = load_runs(tmp_path)
    rows = {r["env"]: r for r in offpolicy.summary(runs)["environments"]}
    assert not failures and set(rows) == {"Reacher-misc", "PointRobot-misc", "MountainCarContinuous-v0", "Swimmer-misc"}
    assert rows["Reacher-misc"]["learns"] and rows["Reacher-misc"]["gain"] == pytest.approx(43.0)
    assert rows["Reacher-misc"]["gain_ci_low"] <= 43.0 <= rows["Reacher-misc"]["gain_ci_high"]
    assert not rows["PointRobot-misc"]["learns"] and not rows["Swimmer-misc"]["learns"]
    assert rows["MountainCarContinuous-v0"]["learns"] and rows["MountainCarContinuous-v0"]["runs_reaching"] == 0
    assert rows["Reacher-misc"]["threshold"] is None and rows["Reacher-misc"]["random_episodes"] == 50
    text = offpolicy.markdown(offpolicy.summary(runs))
    assert (
        "| MountainCarContinuous-v0 | jax_nnx | 5 | -1.0 [-1.0, -1.0] | -30.0 (50) | 29.0 [29.0, 29.0] | yes | 0/5 (bar 90) |"
        in text
    )


def test_which_environments_td3_learns_is_asked_of_every_variant():
    made = plan("--preset", "td3-envs")
    variants = {"jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile"}
    assert {r.variant for r in made.runs} == variants
    assert {r.env for r in made.runs} == {"Reacher-misc", "Swimmer-misc", "MountainCarContinuous-v0"}
    assert len(made.runs) == 5 * 3 * 5 and {r.script for r in made.runs} == {f"td3_{v}.py" for v in variants}
    for run in made.runs:
        args = parsed_args(ROOT / run.script, command(run))
        assert (args["total_timesteps"], args["learning_starts"]) == (50000, 5000)


def test_the_gpu_preset_holds_sacs_and_td3s_gpu_cells_in_parts_of_their_own_after_cartpoles():
    made = plan("--preset", "gpu")
    names = [r.name for r in made.runs]
    assert len(set(names)) == len(names)  # one record each: no off-policy run's name is another's
    where = {}
    for algorithm in ("sac", "td3"):
        where[algorithm] = [i for i, r in enumerate(made.runs) if r.script.startswith(f"{algorithm}_")]
        own = plan("--preset", f"{algorithm}-gpu").runs
        if algorithm == "td3":  # the same cells as SAC's: its records are named apart
            own = [r._replace(name=r.name.replace("__seed", "__td3__seed")) for r in own]
        assert own and [made.runs[i] for i in where[algorithm]] == own  # its preset's runs, in its order and flags
        indices = where[algorithm]
        assert indices == list(range(indices[0], indices[-1] + 1))
        parts = {made.part[i] for i in indices}
        assert all(made.part[i] not in parts for i in range(len(made.runs)) if i not in indices)  # parts of their own
    cartpole = {made.part[i] for i, r in enumerate(made.runs) if r.env == "CartPole-v1" and int(r.seed) <= 3}
    first = made.part[where["sac"][0]]
    assert first == max(p for p in cartpole if p < first) + 1 and where["td3"][0] == where["sac"][-1] + 1
    assert not [r for r in plan("--preset", "gpu", "--envs", "CartPole-v1").runs if not r.script.startswith("ppo_")]
    narrowed = {r.script for r in plan("--preset", "gpu", "--variants", "jax_linen,linen_nojit").runs}
    assert narrowed == {"ppo_jax_linen.py", "ppo_linen_nojit.py", "sac_jax_linen.py", "td3_jax_linen.py"}


def test_plot_gives_a_set_of_three_algorithms_a_report_each(tmp_path):
    """A gpu preset's set holds PPO's, SAC's and TD3's records: PPO's report is the one its records alone make, SAC's
    goes to sac/ and TD3's to td3/, each of its own records alone."""
    import plot
    from report import front

    ppo, mixed_set = tmp_path / "ppo", tmp_path / "mixed_set"
    shutil.copytree(ROOT / "results/speed/craftax-sync/records", ppo)
    shutil.copytree(ppo, mixed_set)
    cpu = json.loads(next(ppo.rglob("*.json")).read_text())["cpu"]
    for algorithm in ("sac", "td3"):
        directory = ROOT / "results" / front.OFFPOLICY_SOURCES[algorithm][0] / "records/overall"
        for path in sorted(directory.glob("*__s__n0016__u1__seed[123].json")):
            record = json.loads(path.read_text()) | {"cpu": cpu}  # timed on the PPO records' machine, as one set's are
            (mixed_set / "overall").mkdir(exist_ok=True)
            (mixed_set / "overall" / f"{algorithm}-{path.name}").write_text(json.dumps(record))
    assert plot.main([str(ppo), "--out", str(tmp_path / "alone")]) == 0
    assert plot.main([str(mixed_set), "--out", str(tmp_path / "mixed")]) == 0
    alone, mixed = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("alone", "mixed"))
    assert json.dumps(alone).replace(str(ppo), "DIR") == json.dumps(mixed).replace(str(mixed_set), "DIR")
    for algorithm, title in (("sac", "# SAC: "), ("td3", "# TD3: ")):
        text = (tmp_path / "mixed" / algorithm / "summary.md").read_text()
        assert text.startswith(title) and "Pendulum-v1, s (64x64), 16 envs, UTD 1 (3 blocks; " in text
        assert "Pendulum" not in json.dumps(mixed)


def sac_sweep(directory, *flags, steady=None, preset="sac", torch=2.0, **changes):
    """The sac (or td3) preset's runs at s on Pendulum-v1 (3 blocks) as records in `directory`: torch `torch` times
    Linen's time. changes: fields to set in every record (or, as args_NAME, in its args)."""
    for run in plan("--preset", preset, "--envs", "Pendulum-v1", "--sizes", "s", "--repeats", "3", *flags).runs:
        record = record_of(run, steady=steady or (torch if run.variant == "torch" else 1.0))
        record["cpu"] = {"model": "test CPU", "cores": 2}  # a machine, as plot.py names it
        for key, value in changes.items():
            if key.startswith("args_"):
                record["args"][key[5:]] = value
            else:
                record[key] = value
        path = directory / f"{run.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record))


def test_a_cell_joins_records_of_one_setting_only(tmp_path, capsys):
    """Records of another gamma in the same folder would join a cell's blocks unseen: refused in one line, by the
    report and by plot.py, which writes nothing."""
    import plot

    sac_sweep(tmp_path / "records")
    runs, _ = load_runs(tmp_path / "records")
    assert offpolicy.summary(runs)["timing"]  # alone, one setting: a report
    one = next((tmp_path / "records" / "overall").glob("jax_nnx__*__seed2.json"))
    record = json.loads(one.read_text())
    record["args"]["gamma"] = 0.9
    one.write_text(json.dumps(record))
    runs, _ = load_runs(tmp_path / "records")
    with pytest.raises(offpolicy.MixedSettings, match="differ in gamma"):
        offpolicy.summary(runs)
    out = tmp_path / "report"
    assert plot.main([str(tmp_path / "records"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "differ in gamma (0.9, 0.99)" in err[0] and not out.exists()


def test_a_cell_without_linen_is_reported_without_a_ratio(tmp_path):
    sac_sweep(tmp_path, "--variants", "jax_nnx,torch")
    runs, _ = load_runs(tmp_path)
    text = offpolicy.markdown(offpolicy.summary(runs))
    assert "no jax_linen runs to divide by" in text


def test_the_steps_and_the_updates_are_told_apart_from_the_steps_alone(tmp_path):
    """UTD 0 (the steps alone) at a third of UTD 1's time: the steps' share is a third in every variant, and the
    microseconds of a gradient step the rest."""
    for run in plan("--preset", "sac", "--envs", "Pendulum-v1", "--sizes", "s", "--repeats", "3").runs:
        args = parsed_args(ROOT / run.script, command(run))
        if args["num_envs"] != 1 or args["updates_per_step"] > 1 or args["full_buffer"]:
            continue
        record = record_of(run, steady=0.5 if args["updates_per_step"] == 0 else 1.5)
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    runs, _ = load_runs(tmp_path)
    split = offpolicy.summary(runs)["split"]
    assert {r["variant"] for r in split} == {"jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile"}
    for row in split:
        assert row["steps_share"] == pytest.approx(1 / 3) and row["blocks"] == 3
        assert row["step_us"] == pytest.approx(1e6 * 0.5 / 500) and row["gradient_step_us"] == pytest.approx(1e6 * 1.0 / 500)


def test_what_a_full_buffer_costs_is_each_variants_full_iteration_over_its_own_in_the_same_block(tmp_path):
    """A full buffer at 1.2x the filled rows' time for the JAX variants, 1.0x for torch's: each variant's row says so,
    over the full-buffer cell's blocks; a set without that cell has no such table."""
    for run in plan("--preset", "sac", "--envs", "Pendulum-v1", "--sizes", "s", "--repeats", "3").runs:
        args = parsed_args(ROOT / run.script, command(run))
        if args["num_envs"] != 1 or args["updates_per_step"] != 1:
            continue
        slower = 1.2 if args["full_buffer"] and "jax" in run.script else 1.0
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record_of(run, steady=slower * (1 + 0.1 * args["seed"]))))
    runs, _ = load_runs(tmp_path)
    rows = {r["variant"]: r for r in offpolicy.summary(runs, learning=False)["fullness"]}
    assert set(rows) == {"jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile"}
    for variant, row in rows.items():
        assert row["full_over_filled"] == pytest.approx(1.2 if "jax" in variant else 1.0) and row["blocks"] == 3
    assert "full buffer over the filled rows" in offpolicy.markdown(offpolicy.summary(runs))
    filled = [r for r in runs if not r.record["args"]["full_buffer"]]
    assert offpolicy.summary(filled, learning=False)["fullness"] == []


def test_the_off_policy_table_refuses_a_set_of_two_machines(tmp_path):
    """One record of another CPU model in the timing set: the README's table is refused, not moved."""
    from report import front

    for name in front.OFFPOLICY_SOURCES["sac"]:
        sac_sweep(tmp_path / name / "records")
    one = next((tmp_path / front.OFFPOLICY_SOURCES["sac"][0] / "records/overall").glob("jax_nnx__*__seed2.json"))
    one.write_text(json.dumps(json.loads(one.read_text()) | {"cpu": {"model": "another CPU", "cores": 2}}))
    with pytest.raises(front.FrontError, match=f"{front.OFFPOLICY_SOURCES['sac'][0]}: .* 2 machines"):
        front.offpolicy_summary(tmp_path, None)


def test_the_readme_table_holds_sac_and_td3_in_one_table_each_from_its_own_sweep(tmp_path):
    """README's off-policy table: a row per algorithm and cell, each multiple from its algorithm's own sweep (torch 2x
    Linen in SAC's, 3x in TD3's), '-' where a variant did not run; TD3's sets without its sweep: refused."""
    from report import front

    sac_sweep(tmp_path / front.OFFPOLICY_SOURCES["sac"][0] / "records")
    sac_sweep(tmp_path / "speed/td3-cpu/records", preset="td3", torch=3.0)
    made = front.offpolicy_table(front.offpolicy_summary(tmp_path, None, learning=False), "results/", learning=False)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in made.splitlines() if line.startswith("| ")]
    head, body = rows[0], rows[1:]
    torch = {(r[0], r[1]): r[head.index("torch")] for r in body}
    sac = {cell: ratio for (name, cell), ratio in torch.items() if name == "SAC"}
    td3 = {cell: ratio for (name, cell), ratio in torch.items() if name == "TD3"}
    assert len(sac) == 5 and len(td3) == 3 and set(td3) < set(sac)  # TD3's cells are some of SAC's
    assert set(sac.values()) == {"2.00 [2.00, 2.00]"} and set(td3.values()) == {"3.00 [3.00, 3.00]"}
    assert "[speed/td3-cpu](results/speed/td3-cpu/report/summary.md)" in made
    (tmp_path / "learn/td3-pendulum/records").mkdir(parents=True)
    shutil.rmtree(tmp_path / "speed/td3-cpu")
    with pytest.raises(front.FrontError, match="td3-cpu/records"):
        front.offpolicy_summary(tmp_path, None)


def test_plot_removes_an_off_policy_figure_an_earlier_report_left(tmp_path):

    import plot

    out = tmp_path / "report"
    out.mkdir()
    (out / "offpolicy.png").write_bytes(b"\x89PNG an earlier SAC report's")
    shutil.copytree(ROOT / "results/speed/craftax-sync/records", tmp_path / "ppo")
    assert plot.main([str(tmp_path / "ppo"), "--out", str(out)]) == 0
    assert not (out / "offpolicy.png").exists()


def test_more_envs_are_told_as_each_variants_env_steps_a_second_over_its_own_at_one_env_block_by_block(tmp_path):
    """The dqn preset's cells at 1 env and 16: each iteration 500 steps of the loop, 16 envs taking 1.6 times the
    time of 1, the blocks' machines slower one after another. Each block's gain is 16 / 1.6 = 10, so the geometric
    mean and both ends of its interval are 10, in every variant; paired across blocks, the interval would widen."""
    for run in plan("--preset", "dqn", "--envs", "CartPole-v1", "--repeats", "3").runs:
        args = parsed_args(ROOT / run.script, command(run))
        slower = 1.5 ** args["seed"]
        record = record_of(run, steady=slower * (1.6 if args["num_envs"] == 16 else 1.0))
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    runs, _ = load_runs(tmp_path)
    rows = offpolicy.summary(runs, learning=False)["env_scaling"]
    assert {r["variant"] for r in rows} == {"jax_linen", "jax_nnx", "jax_equinox", "torch", "torch_compile"}
    for row in rows:
        assert (row["num_envs"], row["fewest_envs"], row["blocks"]) == (16, 1, 3)
        assert [row["env_steps_gain"], row["env_steps_gain_ci_low"], row["env_steps_gain_ci_high"]] == pytest.approx(
            [10, 10, 10]
        )
    assert "16 (16x) | 3 | 10.00 [10.00, 10.00]" in offpolicy.markdown(offpolicy.summary(runs))


def test_one_run_of_an_environment_is_too_few_to_say_whether_it_learns_and_gives_no_empty_learning_table(tmp_path):
    """A learn set's first seed alone: its one run's interval is the run itself, so no "yes"; and no learning table
    with a head and no rows."""
    for run in plan("--preset", "dqn-learn", "--repeats", "1").runs:
        record = record_of(run, final_return=400.0)
        record |= {"random_return": 20.0, "random_episodes": 40}
        (tmp_path / f"{run.name}.json").parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{run.name}.json").write_text(json.dumps(record))
    runs, _ = load_runs(tmp_path)
    summary = offpolicy.summary(runs)
    assert summary["environments"] and all(r["learns"] is None for r in summary["environments"])
    text = offpolicy.markdown(summary)
    assert "too few runs" in text and "| yes |" not in text and "P(improvement)" not in text
