"""The six copies of the benchmark harness (everything below `# ---- benchmark harness`) measure alike. Among the
scripts of one framework the harness is the same text, line for line, but for the lines a script marks "# own"
(the libraries its record names, torch.compile's compile counter) and the statements whose first line it so marks
(its TOOLING, torch.compile's compiler); between frameworks, every function they share
is the same but for those that must speak to the framework (its devices and GPU description)."""

import ast
import difflib
import functools

import pytest

from conftest import ROOT, SCRIPTS, framework

# What a harness may write differently for torch and for JAX: how it finds its devices, how it describes a
# GPU, how the iteration's statistics are computed and how its metrics come back to the host.
FRAMEWORK_SPECIFIC = {"check_args", "gpu_info", "Log", "compiler_caches", "logged"}
OWN = "# own"


def harness_text(variant: str) -> str:
    text = (ROOT / SCRIPTS[variant]).read_text()
    return text[text.index("-- benchmark harness\n") :]


@functools.cache  # read once: every function's test asks it of every script
def harness(variant: str) -> dict:
    """{name: source} of the top-level functions and classes below the harness line."""
    text = (ROOT / SCRIPTS[variant]).read_text()
    lines = text.splitlines()
    line = next(i for i, line in enumerate(lines, 1) if line.endswith("-- benchmark harness"))
    return {
        node.name: "\n".join(lines[node.lineno - 1 : node.end_lineno])
        for node in ast.parse(text).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and node.lineno > line
        and OWN not in lines[node.lineno - 1]  # a script's own function
    }


def compared(lines: list) -> list:
    """The indices of the lines compared: not those marked "# own", nor any line of a top-level statement (a function,
    the TOOLING dict) whose first line is so marked, nor blank lines (the formatter's)."""
    kept, in_own = [], False
    for i, line in enumerate(lines):
        if line and not line[0].isspace() and line[0] not in ")]}":  # a top-level statement begins
            in_own = OWN in line
        if not in_own and OWN not in line and line.strip():
            kept.append(i)
    return kept


def own_lines_out(text: str) -> str:
    lines = text.splitlines()
    return "\n".join(lines[i] for i in compared(lines))


def differences(texts: dict) -> list:
    """For each framework, the lines in which a script's harness (`texts`: variant -> harness text) differs from
    the first script's, lines marked "# own" left out: a unified diff per differing script."""
    found = []
    for group in ({v for v in texts if framework(v) == f} for f in ("jax", "torch")):
        kept = {v: own_lines_out(texts[v]).splitlines() for v in sorted(group)}
        first = next(iter(kept), None)
        for variant, lines in kept.items():
            diff = list(difflib.unified_diff(kept[first], lines, SCRIPTS[first], SCRIPTS[variant], lineterm="", n=0))
            if diff:
                found.append("\n".join(diff[:12]))
    return found


def test_every_script_has_a_harness_below_its_line():
    for variant in SCRIPTS:
        assert {"UsageError", "check_args", "check_writable", "cpu_info", "Log", "main", "write_json_atomic"} <= set(
            harness(variant)
        )


def test_the_harness_is_the_same_text_in_every_script_of_a_framework():
    found = differences({v: harness_text(v) for v in SCRIPTS})
    assert not found, "\n\n".join(found)


def test_a_one_line_edit_to_any_copy_is_found():
    """The check above cannot pass by mistake: one changed line in one script's harness, anywhere, is reported."""
    texts = {v: harness_text(v) for v in SCRIPTS}
    for variant, text in texts.items():
        lines = text.splitlines()
        candidates = compared(lines)
        for i in candidates[:: max(1, len(candidates) // 25)]:  # about 25 places in each script
            edited = lines[:i] + [lines[i].replace("e", "E", 1) + "  # edited"] + lines[i + 1 :]
            assert differences({**texts, variant: "\n".join(edited)}), f"an edit of line {i} of {variant}'s harness passed"


@pytest.mark.parametrize("name", sorted(set.union(*(set(harness(v)) for v in SCRIPTS))))
def test_a_harness_function_is_the_same_in_every_script_that_has_it(name):
    """torch's own helpers (synchronize, its sync-debug trap) exist in the torch scripts only, alike in both."""
    sources = {variant: own_lines_out(harness(variant)[name]) for variant in SCRIPTS if name in harness(variant)}
    groups = [list(SCRIPTS)]
    if name in FRAMEWORK_SPECIFIC or len(sources) < len(SCRIPTS):
        groups = [[v for v in SCRIPTS if framework(v) == f] for f in ("jax", "torch")]
        groups = [group for group in groups if any(v in sources for v in group)]
        for group in groups:  # a framework's helper is in every script of that framework
            assert all(v in sources for v in group), f"{name} is missing from some of {group}"
    for group in groups:
        first = sources[group[0]]
        for variant in group[1:]:
            assert sources[variant] == first, f"{name} differs between {SCRIPTS[group[0]]} and {SCRIPTS[variant]}"
