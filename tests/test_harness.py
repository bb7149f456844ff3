"""What measures the scripts lives once: harness.py holds what every script does alike, and below each script's harness
line is only what its framework does its own way (its devices, its waits and guards). Among the scripts of one framework
a function both define below the line is the same text, but for those a script must write otherwise; no script defines
again what harness.py defines; and the line is one a reader cannot take for a PPO section."""

import ast
import difflib
import functools
import re

from conftest import HARNESS_LINE, ROOT, SCRIPTS, framework, harness_line

# What a script of a framework writes its own way below the line: how its seeds are stacked (NNX's modules, Equinox's
# arrays), and torch.compile's mode and CUDA graphs (which its check_args refuses where they cannot run).
OWN = {"jax": {"stack_seeds"}, "torch": {"compile_mode", "cuda_graphed", "check_args"}}


@functools.cache  # read once: every test asks it of every script
def below_the_line(variant: str) -> dict:
    """{name: source} of the top-level functions and classes below the harness line."""
    text = (ROOT / SCRIPTS[variant]).read_text()
    line = harness_line(text)
    return {
        node.name: ast.get_source_segment(text, node)
        for node in ast.parse(text).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.lineno > line
    }


def differing(parts: dict) -> list:
    """For each framework, a unified diff for each function that a script defines otherwise than the framework's first
    script to define it (names in OWN left out)."""
    found = []
    for fw in ("jax", "torch"):
        group = [v for v in parts if framework(v) == fw]
        for name in sorted(set.union(*(set(parts[v]) for v in group)) - OWN[fw]):
            having = [v for v in group if name in parts[v]]
            for variant in having[1:]:
                first, other = parts[having[0]][name].splitlines(), parts[variant][name].splitlines()
                diff = list(difflib.unified_diff(first, other, SCRIPTS[having[0]], SCRIPTS[variant], lineterm="", n=0))
                if diff:
                    found.append("\n".join(diff[:12]))
    return found


def test_every_script_has_one_harness_line_unlike_its_section_headers():
    for script in SCRIPTS.values():
        lines = (ROOT / script).read_text().splitlines()
        assert sum(bool(HARNESS_LINE.match(line)) for line in lines) == 1, f"{script}: not one harness line"
        sections = [line for line in lines if line.startswith("# ----")]
        assert sections and not any("harness" in line for line in sections), f"{script}: a section header says harness"


def test_what_the_scripts_of_a_framework_define_below_the_line_is_one_text():
    found = differing({v: below_the_line(v) for v in SCRIPTS})
    assert not found, "\n\n".join(found)


def test_a_one_line_edit_to_one_script_below_the_line_is_found():
    """The check above cannot pass by mistake: a changed line in a function two scripts share is reported."""
    parts = {v: below_the_line(v) for v in SCRIPTS}
    shared = [
        (v, name)
        for v in SCRIPTS
        for name in parts[v]
        if name not in OWN[framework(v)] and any(name in parts[w] for w in SCRIPTS if w != v and framework(w) == framework(v))
    ]
    assert shared, "no function is shared below the line: nothing to check"
    for variant, name in shared:
        edited = parts[variant][name].replace("(", "( ", 1)
        assert differing({**parts, variant: {**parts[variant], name: edited}}), f"an edit of {name} in {variant} passed"


def test_no_script_defines_again_what_harness_py_defines():
    shared = {
        node.name
        for node in ast.parse((ROOT / "harness.py").read_text()).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    for variant, script in SCRIPTS.items():
        tree = ast.parse((ROOT / script).read_text())
        defined = {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        assert not (defined & shared) - OWN[framework(variant)], f"{script} defines {sorted(defined & shared)} again"


def test_harness_py_imports_no_framework_but_jax():
    """harness.py serves the JAX and the torch scripts alike: torch is imported only inside what the torch scripts call."""
    tree = ast.parse((ROOT / "harness.py").read_text())
    top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
    top |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom)}
    assert "jax" in top and not top & {"torch", "flax", "equinox"}, sorted(top)
    assert not re.search(r"^(import|from) (torch|flax|equinox)", (ROOT / "harness.py").read_text(), re.M)
