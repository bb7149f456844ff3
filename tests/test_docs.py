"""README.md, docs/ and the results READMEs: every relative link and image points at a file (and heading) that
exists, no page speaks of the place the project was made in, and every command the README quotes names only flags
its program accepts."""

import json
import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from conftest import ROOT, in_background
from report.tables import fmt

PAGES = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "results" / "README.md",
    *sorted((ROOT / "results").glob("*/*/README.md")),
]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set:
    return {slug(line.lstrip("#")) for line in page.read_text().splitlines() if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_image_points_at_something_that_exists(page):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # code blocks hold commands, not links
    links = re.findall(r"!?\[[^\]]*\]\(([^)\s]+)\)", text)
    assert links or page.name != "README.md"
    for link in links:
        if re.match(r"[a-z]+://", link):
            continue
        path, _, anchor = link.partition("#")
        target = (page.parent / path).resolve() if path else page
        assert target.exists(), f"{page.name}: {link} points at nothing"
        if anchor:
            assert target.suffix == ".md" and anchor in anchors(target), (
                f"{page.name}: no heading for #{anchor} in {target.name}"
            )


def readme_commands():
    """(program, flags) of every command in the README's code blocks: `python X.py ...` and `bash benchmark.sh ...`."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S):
        for line in block.splitlines():
            for command in re.split(r"&&|\|", line.split(" #")[0]):
                words = shlex.split(command)
                program = next((w for w in words if w.endswith(".py") or w == "benchmark.sh"), None)
                if program:
                    commands.append((program, [w.split("=")[0] for w in words if w.startswith("--")]))
    return commands


@cache
def help_text(program: str) -> str:
    command = ["bash", str(ROOT / program)] if program.endswith(".sh") else [sys.executable, str(ROOT / program)]
    proc = subprocess.run([*command, "--help"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def readme_programs_help(directory):
    """The README's commands, and the --help of each program they run."""
    commands = readme_commands()
    return commands, {program: help_text(program) for program, _ in commands}


@in_background(readme_programs_help)
def test_every_flag_the_readme_quotes_is_one_its_program_accepts(background):
    commands, helps = background
    assert {program for program, _ in commands} >= {"ppo_jax_linen.py", "benchmark.sh", "plot.py"}
    for program, flags in commands:
        for flag in flags:
            assert re.search(rf"{re.escape(flag)}\b", helps[program]), f"{program} has no {flag}"


def test_no_readme_sentence_sends_a_cpu_user_to_the_full_sweep():
    """`bash benchmark.sh` alone is the GPU sweep: a month on a CPU. The README may name it only as a GPU's, with
    what it costs on a CPU."""
    for line in (ROOT / "README.md").read_text().splitlines():
        if re.search(r"`bash benchmark\.sh`", line):
            assert "GPU" in line and re.search(r"(days|weeks|a month|months) on a CPU", line), line


def test_the_harness_line_the_readme_quotes_is_every_scripts():
    """README's "Learn by reading" names the line above which each script holds PPO and below it the benchmark's
    harness: it must be that line, verbatim, in every script."""
    quoted = re.search(r"`(# =+ benchmark harness)`", (ROOT / "README.md").read_text())
    assert quoted, "the README does not quote the harness line"
    for script in sorted([*ROOT.glob("ppo_*.py"), *ROOT.glob("sac_*.py"), *ROOT.glob("td3_*.py")]):
        assert quoted.group(1) in script.read_text().splitlines(), f"{script.name} has no line {quoted.group(1)!r}"


# Words of the place the project was made in, which a reader elsewhere does not have: the machines it was lent, the
# sittings it was made in, its own package index and clones
NOT_THE_READERS = re.compile(
    r"this project's (package )?index|package index of this project|fresh clones? (here|of this)|\blent\b|"
    r"\bleases?\b|\bsessions?\b|device time|this project's machines?",
    re.I,
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_speaks_of_where_the_project_was_made(page):
    said = [line for line in page.read_text().splitlines() if NOT_THE_READERS.search(line)]
    assert said == [], f"{page.relative_to(ROOT)}: {said[:3]}"


def test_the_time_to_learn_table_gives_the_committed_learn_reports_numbers():
    """The findings' time-to-learn table: every cell ("19.5 [18.3, 20.6]") is the IQM of seconds to the row's bar and its
    interval as some committed report (results/KIND/SET/report/summary.json) gives them for that environment and variant, over as
    many runs as the row says, so a number copied wrong, or left behind when a report is remade, fails here."""
    given = {}
    for path in (ROOT / "results").glob("*/*/report/summary.json"):
        for t in json.loads(path.read_text()).get("time_to_threshold", []):
            if t["seconds_ci"] is None:  # no run reached the bar, or too few for an interval
                continue
            cell = tuple(float(fmt(x)) for x in (t["seconds"], *t["seconds_ci"]))  # as the report rounds them
            given.setdefault((t["env"], t["variant"], t["threshold"]), set()).add((cell, t["runs"]))
    readme = (ROOT / "docs" / "findings.md").read_text()
    header = re.search(r"^\| environment, bar \(runs a variant\) \|(.*)\|$", readme, re.M)
    assert header, "the time-to-learn table's header was not found"
    variants = [v.strip() for v in header.group(1).split("|")]
    # "| CartPole-v1, to 475 (10) | ..." or, where the variants ran different numbers of seeds, "(20; torch's 5)"
    rows = re.findall(r"^\| ([\w.-]+), to (-?[\d.]+) \(([^)]+)\)[^|]* \|(.*)\|$", readme, re.M)
    assert len(rows) >= 5, "the time-to-learn table's rows were not found"
    for env, bar, runs, cells in rows:
        for variant, cell in zip(variants, cells.split("|"), strict=True):
            counts = re.findall(r"\d+", runs)
            reported = {numbers for numbers, n in given.get((env, variant, float(bar)), set()) if str(n) in counts}
            numbers = tuple(float(x) for x in re.fullmatch(r" ?([\d.]+) \[([\d.]+), ([\d.]+)\] ?", cell).groups())
            assert numbers in reported, f"{env} to {bar}, {variant}: findings {cell.strip()}, reports {reported}"


def test_the_help_describes_every_experiment_the_sweep_takes():
    """`benchmark.sh --help` lists the experiments one a line, in the order --experiments names them: none left out."""
    from bench.presets import EXPERIMENTS

    text = help_text("benchmark.sh")
    described = re.findall(r"^  (\w+) +(?:\(\d\) )?\S", text.split("\nExperiments")[1].split("\nEnvironment:")[0], re.M)
    assert described == EXPERIMENTS
    assert f"--experiments LIST   from {','.join(EXPERIMENTS)}" in text


def committed_estimates() -> list:
    """(value, low, high) of every estimate with an interval that a committed report or study's JSON under results/
    holds (the records excepted): a ratio's `ratio`, `ci_low`, `ci_high` or `ci`, a statistic's `X`, `X_ci_low`,
    `X_ci_high` or `X_ci`, steps per second's `agent_sps`, `sps_low`, `sps_high`."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            for key, x in value.items():
                if isinstance(x, (int, float)) and not isinstance(x, bool):
                    ratio = key.startswith("ratio") or key in ("prob_improvement", "agent_sps")
                    pairs = [(f"{key}_ci_low", f"{key}_ci_high")]
                    pairs += [("ci_low", "ci_high"), ("sps_low", "sps_high")] if ratio else []
                    for low, high in pairs:
                        if all(isinstance(value.get(k), (int, float)) for k in (low, high)):
                            found.append((x, value[low], value[high]))
                    for ci in [f"{key}_ci", *(["ci"] if ratio else [])]:
                        if isinstance(value.get(ci), list) and len(value[ci]) == 2 and None not in value[ci]:
                            found.append((x, *value[ci]))
                walk(x)
        elif isinstance(value, list):
            for x in value:
                walk(x)

    for path in sorted((ROOT / "results").rglob("*.json")):
        if "records" not in path.relative_to(ROOT / "results").parts:
            walk(json.loads(path.read_text()))
    return found


def as_printed(printed: str, x: float, scale: float = 1) -> bool:
    """`printed` is x (in units of `scale`) rounded to the digits it shows: 2.00 is 2.0048, 2.01 is not."""
    places = len(printed.partition(".")[2])
    return abs(float(printed) - x / scale) <= 0.5 * 10**-places * 1.000001


INTERVAL = re.compile(r"\[(-?\d+(?:\.\d+)?)(k?), (-?\d+(?:\.\d+)?)(k?)\]")


def intervals(page: Path):
    """(line, the text just before, low, high, scale) of every "[low, high]" on the page but the README's generated
    answer table (test_front checks it) and ranges ("within [0.88, 1.11]", "one torque in [-2, 2]")."""
    text = re.sub(r"<!-- answer\.md.*?<!-- end of answer\.md -->", "", page.read_text(), flags=re.S)
    for m in INTERVAL.finditer(text):
        before = re.split(r"[\[;]", text[max(0, m.start() - 90) : m.start()])[-1]
        if re.search(r"(within|in) $", before):
            continue
        yield text.count("\n", 0, m.start()) + 1, before, m.group(1), m.group(3), 1000 if m.group(2) else 1


@pytest.mark.parametrize("page", ["README.md", "docs/findings.md"])
def test_every_interval_the_readme_and_findings_give_is_a_committed_estimate(page):
    """Every "[low, high]" in the README and the findings is the interval of an estimate some committed JSON under
    results/ holds, rounded as printed (2.00, not 2.01, for 2.0048), so a number copied wrong, or left behind when a
    report is remade, fails here; in the README the estimate itself must be one of the numbers just before it (the
    findings also give reciprocals, 1/0.946 = 1.06x ([0.914, 0.973]), and milliseconds of a study's microseconds)."""
    estimates = committed_estimates()
    wrong = []
    for line, before, low, high, scale in intervals(ROOT / page):
        scales = (scale,) if page == "README.md" else (scale, 1e-3 * scale)
        hits = [e for e in estimates for s in scales if as_printed(low, e[1], s) and as_printed(high, e[2], s)]
        if page == "README.md":
            numbers = re.findall(r"-?\d+(?:\.\d+)?", before.replace(",", ""))
            hits = [e for e in hits if any(as_printed(n, e[0], scale) for n in numbers)]
        if not hits:
            wrong.append(f"line {line}: ...{' '.join(before.split())[-40:]} [{low}, {high}]")
    assert wrong == [], f"{page}: no committed estimate has these intervals: {wrong}"


def test_the_quick_start_sets_up_trains_and_tests_in_a_line_each():
    """README's Quick start is three lines, as CleanRL's: one sets up (a virtual environment, requirements.txt, and
    PyTorch's CPU index beside PyPI, whose 2.13.0+cpu meets the pin), one trains, one runs the tests as CI does
    (.ci/run's last line); the GPU's set-up is named beside it."""
    section = (ROOT / "README.md").read_text().split("## Quick start")[1].split("\n## ")[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    setup, train, test = block.strip().splitlines()
    assert setup.startswith("python3 -m venv .venv && source .venv/bin/activate && pip install -r requirements.txt ")
    assert setup.endswith(" --extra-index-url https://download.pytorch.org/whl/cpu")
    assert train.startswith("python ppo_") and "pip install -r requirements-gpu.txt" in section
    assert (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1] == ".venv/bin/" + test


def test_the_readmes_dqn_learning_line_is_what_the_committed_learn_set_shows():
    """The README's "DQN's, N seeds: every run of every variant learns CartPole-v1 and the gridworld; no difference
    detected": the committed dqn-learn report has N seeds of every variant on both, every run reaching its bar, and
    every probability of improvement over Linen with an interval holding 0.5."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    claim = re.search(
        r"DQN's, (\d+) seeds: every run of every variant learns CartPole-v1 and the gridworld; no difference detected", readme
    )
    assert claim, "the README's DQN learning line was not found"
    summary = json.loads((ROOT / "results/learn/dqn-cartpole-fourrooms/report/summary.json").read_text())
    tables = {table["env"]: table for table in summary["learning"]}
    assert set(tables) == {"CartPole-v1", "FourRooms-misc"}
    for env, table in tables.items():
        assert set(table["seeds"].values()) == {int(claim.group(1))}, (env, table["seeds"])
        for row in table["rows"]:
            if row["variant"] != "jax_linen":
                low, high = row["prob_improvement_vs_jax_linen_ci_low"], row["prob_improvement_vs_jax_linen_ci_high"]
                assert low <= 0.5 <= high, (env, row["variant"], low, high)
    reached = [(e["env"], e["variant"], e["runs_reaching"], e["runs"]) for e in summary["environments"]]
    assert len(reached) == 10 and all(n == runs for _, _, n, runs in reached), reached
