"""The six copies of the benchmark harness (everything below `# ---- benchmark harness`) measure alike: every
function and class they share has the same source in all six, but for those that must speak to a framework
(its devices and GPU description), which are the same within a framework's scripts."""

import ast

import pytest

from conftest import ROOT, SCRIPTS

# What a harness may write differently for torch and for JAX: how it finds its devices, how it describes a
# GPU, and how the iteration's metrics come back to the host.
FRAMEWORK_SPECIFIC = {"check_args", "gpu_info", "Log"}


def harness(variant: str) -> dict:
    """{name: source} of the top-level functions and classes below the harness line."""
    text = (ROOT / SCRIPTS[variant]).read_text()
    line = next(i for i, line in enumerate(text.splitlines(), 1) if line.endswith("-- benchmark harness"))
    tree = ast.parse(text)
    return {
        node.name: ast.get_source_segment(text, node)
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.lineno > line
    }


def framework(variant: str) -> str:
    return "torch" if variant.startswith("torch") else "jax"


def test_every_script_has_a_harness_below_its_line():
    for variant in SCRIPTS:
        assert {"UsageError", "check_args", "check_writable", "cpu_info", "Log", "main", "write_json_atomic"} <= set(
            harness(variant)
        )


@pytest.mark.parametrize("name", sorted(set.union(*(set(harness(v)) for v in SCRIPTS))))
def test_a_harness_function_is_the_same_in_every_script_that_has_it(name):
    """torch's own helpers (synchronize, its sync-debug trap) exist in the torch scripts only, alike in both."""
    sources = {variant: harness(variant)[name] for variant in SCRIPTS if name in harness(variant)}
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
