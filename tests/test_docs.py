"""README.md and docs/: every relative link and image points at a file (and heading) that exists, and every
command the README quotes names only flags its program accepts."""

import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from conftest import ROOT, in_background

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


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


def test_the_reading_table_gives_each_scripts_ppo_part_as_it_is():
    """README's "Learn by reading" table: each pair's "PPO part (lines)" is the lines above the script's
    `# ---- benchmark harness` line, so an edit of a script that moves that line fails here until the table says so."""
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `(ppo_\w+\.py)` \| `(ppo_\w+\.py)` \|.*\| (\d+) / (\d+) \|$", readme, re.M)
    assert len(rows) >= 5, "the reading table's rows were not found"
    for left, right, *counts in rows:
        for script, count in zip((left, right), counts):
            lines = (ROOT / script).read_text().splitlines()
            harness = next(i for i, line in enumerate(lines) if line.endswith("-- benchmark harness"))
            assert int(count) == harness, f"README gives {script} {count} lines of PPO, it has {harness}"
