"""Every tool that writes a result (plot.py, bench/env_cost.py, bench/host_cost.py, the studies) refuses an output it could
not write before its work, in one line with exit code 2, and creates nothing: not after minutes of measuring; and a
write that fails leaves no temporary file."""

import functools

import pytest

from bench import load_script, outputs

# tool -> its arguments but --out (DIR for plot.py: the temporary directory), and whether --out names a directory
TOOLS = {
    "plot.py": (["{tmp}"], True),
    "bench/env_cost.py": (["CartPole-v1"], False),
    "bench/host_cost.py": (["CartPole-v1"], False),
    "studies/craftax_scan.py": ([], False),
    "studies/expensive_env.py": (["{tmp}"], False),
    "studies/gae_doubling.py": ([], False),
    "studies/same_start.py": ([], False),
    "studies/seeds_learn.py": ([], False),
    "studies/torch_compile_check.py": ([], False),
    "studies/torch_compile_parts.py": (["--parts", "none"], True),
}


@functools.cache
def load(tool: str):
    return load_script.load(tool, "benchback_out_" + tool.replace("/", "_").removesuffix(".py"))


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("where", ["under a file", "a directory for a file", "unwritable"])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(tool, where, tmp_path, capsys):
    flags, directory = TOOLS[tool]
    (tmp_path / "notes.txt").write_text("")
    if where == "a directory for a file" and directory:
        where = "a file for a directory"
    out, problem = {
        "under a file": (tmp_path / "notes.txt" / "out", "notes.txt is a file"),
        "a directory for a file": (tmp_path, f"{tmp_path} is a directory"),
        "a file for a directory": (tmp_path / "notes.txt", "notes.txt is a file"),
        "unwritable": ("/proc/benchback/out", "/proc does not accept files"),
    }[where]
    module = load(tool)
    with pytest.raises(SystemExit) as exited:
        module.main([*(f.format(tmp=tmp_path) for f in flags), "--out", str(out)])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith(f"error: --out {out} cannot be written: ") and problem in err, err
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_result_whose_write_fails_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "result.json"
    target.mkdir()  # a directory where the file should go: the rename onto it fails after the text is written
    with pytest.raises(OSError):
        outputs.write_atomic(target, "{}")
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"] and not any(target.iterdir())
