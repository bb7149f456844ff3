"""What the scripts share lives once: benchback/ holds what every script does alike, a module a job, and below each
script's harness line is only what its framework does its own way (its devices, its waits and guards). Among the scripts
of one framework a function both define below the line is the same text, but for those a script must write otherwise;
no script defines again what benchback/ defines; the line is one a reader cannot take for a PPO section. The modules
form no import cycle, register nothing when imported, and those the JAX scripts import never import torch."""

import ast
import difflib
import functools
import subprocess
import sys

import pytest

from conftest import HARNESS_LINE, ROOT, SCRIPTS, framework, script_parts

# What a script of a framework writes its own way below the line: how its seeds are stacked (NNX's modules, Equinox's
# arrays), and torch.compile's mode and CUDA graphs (which its check_args refuses where they cannot run).
OWN = {"jax": {"stack_seeds"}, "torch": {"compile_mode", "cuda_graphed", "check_args"}}


@functools.cache  # read once: every test asks it of every script
def below_the_line(variant: str) -> dict:
    """{name: source} of the top-level functions and classes below the harness line."""
    return script_parts(variant, below=True)


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


SHARED = sorted((ROOT / "benchback").glob("*.py"))


def defined(path) -> set:
    return {node.name for node in ast.parse(path.read_text()).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_no_script_defines_again_what_benchback_defines():
    shared = set.union(*(defined(path) for path in SHARED))
    for variant, script in SCRIPTS.items():
        again = (defined(ROOT / script) & shared) - OWN[framework(variant)]
        assert not again, f"{script} defines {sorted(again)} again"


# ---------------------------------------------------------------- imports
def imported(path, package: str) -> set:
    """The modules `path` imports (`package` being its own, for relative imports), at its top or inside a function:
    `from a import b` counts as a.b where that is a module, else as a."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from .a import y
                base = ".".join([package, base]).strip(".")
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return found


def import_graph(root) -> dict:
    """{module: the project's modules it imports} for every .py file of the project below `root` (tests aside)."""
    paths = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[0] in ("tests", ".venv") or any(p.startswith(".") for p in parts):
            continue
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        paths[name] = path
    graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = {m for m in imported(path, package) if m in paths and m != name}
    return graph


def cycle(graph: dict):
    """One import cycle as a list of modules (the first again at its end), or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt, path + [nxt])):
                return found
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node, [node])):
            return found
    return None


def test_the_projects_modules_import_no_cycle():
    graph = import_graph(ROOT)
    assert "benchback.record" in graph and "benchback.checks" in graph["benchback.record"]  # the graph sees the package
    assert cycle(graph) is None, " -> ".join(cycle(graph))


def test_an_import_cycle_is_found_even_inside_a_function(tmp_path):
    """The check above can fail: two modules of a package that import each other, one of them lazily."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text("from pkg import b\n")
    (tmp_path / "pkg" / "b.py").write_text("def later():\n    from . import a\n")
    (tmp_path / "pkg" / "c.py").write_text("import pkg.a\n")
    assert cycle(import_graph(tmp_path)) in (["pkg.a", "pkg.b", "pkg.a"], ["pkg.b", "pkg.a", "pkg.b"])
    (tmp_path / "pkg" / "b.py").write_text("def later():\n    pass\n")
    assert cycle(import_graph(tmp_path)) is None


# What a module could register at import: jax.monitoring's listeners (the compile counter's kind), and dynamo's
# callbacks; and whether importing it loads torch. Groups of modules apart by "--", imported in turn, one line each.
PROBE = """
import importlib, sys
sys.path.insert(0, sys.argv[1])
import jax._src.monitoring as monitoring
lists = [v for k, v in vars(monitoring).items() if k.startswith("_") and k.endswith("_listeners")]
before = [len(x) for x in lists]
for group in " ".join(sys.argv[2:]).split(" -- "):
    for name in group.split():
        importlib.import_module(name)
    registered = [len(x) for x in lists] != before
    if "torch" in sys.modules:
        import torch._dynamo
        registered |= bool(torch._dynamo.callback_handler.start_callbacks)
    print(registered, "torch" in sys.modules)
"""


def probe(root, *groups) -> list:
    """For each group of modules, imported in turn in one new process: (whether a listener or callback is registered
    by then, whether torch is loaded by then)."""
    names = [word for group in groups for word in (*group, "--")][:-1]
    proc = subprocess.run([sys.executable, "-c", PROBE, str(root), *names], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return [tuple(word == "True" for word in line.split()) for line in proc.stdout.splitlines()]


# What the JAX scripts import of benchback/: none of it may load torch.
JAX_SIDE = ["benchback." + p.stem for p in SHARED if p.stem not in ("__init__", "torch_envs", "torch_ports", "gymnasium_envs")]


@pytest.mark.slow  # a fresh interpreter per shared module, 20 s on 2 cores
def test_importing_a_shared_module_registers_nothing_and_the_jax_side_loads_no_torch():
    every = ["benchback." + p.stem for p in SHARED if p.stem != "__init__"]
    assert probe(ROOT, JAX_SIDE, every) == [(False, False), (False, True)]


def test_a_module_registering_a_listener_at_import_is_found(tmp_path):
    """The probe above can fail: a module that registers a jax.monitoring listener when imported is caught."""
    (tmp_path / "registers.py").write_text("import jax\njax.monitoring.register_event_listener(lambda *a, **k: None)\n")
    (tmp_path / "quiet.py").write_text("import jax\n")
    assert probe(tmp_path, ["quiet"], ["registers"]) == [(False, False), (True, False)]
