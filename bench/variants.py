"""The list of variants: every `ppo_*.py` (and, for the SAC presets, every `sac_*.py`) beside benchmark.sh, and what
each says of itself in its TOOLING line.

A script's TOOLING dict is read from its source (ast.literal_eval), not by importing it, so that benchmark.sh,
plot.py and the tests learn the variants without loading jax or torch. Adding a variant is adding its script;
nothing here names one.

    python bench/variants.py      # the variants, one a line: name, framework, compiler, script
    python bench/variants.py sac  # SAC's
"""

import ast
import dataclasses
import functools
import sys
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parent.parent
ALGORITHMS = ("ppo", "sac", "td3", "dqn")  # a script's name starts with its algorithm: ppo_jax_linen.py, sac_jax_linen.py
OFFPOLICY_ALGORITHMS = ALGORITHMS[1:]  # those with a replay buffer: a timed iteration of env steps and gradient steps
# For a variant whose colour another variant already has (a script copied to start a new one): the tab10
# colours no script or setting declares, in order.
SPARE_COLORS = ["tab:gray", "tab:cyan"]
# A script's settings, each {"tag": ..., "flags": ..., "color": ...}, run beside it in the compile experiment, by
# TOOLING key: whether only a GPU can run it. compile_off switches the script's compilation off (NNX without
# cached_partial); gpu_setting is one a CPU refuses (torch.compile with CUDA graphs); gpu_environment is one made by
# the environment the script runs in, {"tag": ..., "environment": "NAME=VALUE", "color": ...}, its VALUE added to the
# variable's (XLA's command buffers for loops: XLA_FLAGS), which its records show and no flag does.
SETTINGS = {"compile_off": False, "gpu_setting": True, "gpu_environment": True}
# A script's environment stacks: a list of settings (each also with "gpu_only" where only a GPU runs it) that run the
# same PPO on other environment code with the same dynamics (torch_envs.py, Gymnasium) or step gymnax's from a Python
# loop; the stacks experiment runs them beside their scripts.
STACKS = "stacks"
FIELDS = {"framework", "compiles", "order", "color", "compile_off_of", STACKS, *SETTINGS}


@dataclasses.dataclass(frozen=True)
class Variant:
    name: str  # the script's name without ppo_ and .py, or SCRIPT+TAG for a setting of a script
    script: str  # the file, relative to the repository
    framework: str  # "jax" or "torch": the harness copy it shares, the devices it finds
    compiles: Optional[str]  # what compiles its iteration (jax.jit, torch.compile, ...); None: it runs eagerly
    order: int  # its place in tables and figures (ties: by name)
    color: str  # its colour in every figure
    compile_off_of: Optional[str] = None  # the variant it is with compilation switched off, in the compile experiment
    flags: tuple = ()  # what a setting adds to its script's command line
    environment: tuple = ()  # what a setting adds to its script's environment: (NAME, VALUE), VALUE after NAME's own
    setting_of: Optional[str] = None  # for a setting: its script's variant, which it runs beside
    gpu_only: bool = False  # a setting only a GPU runs: a plan without a GPU leaves it out
    num_seeds: bool = False  # its Args take --num-seeds: several seeds trained at once (the seeds experiment)
    configs: bool = False  # its Args take --configs: a search's batch of configurations trained at once
    stack: bool = False  # a setting that runs its script on other environment code (the stacks experiment)
    defaults: tuple = ()  # what the script sets in its environment where it has no value: (NAME, VALUE) pairs


class VariantError(ValueError):
    pass


def args_fields(tree: ast.Module) -> set:
    """The fields of the script's Args dataclass, read from its source: the flags it takes."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Args":
            return {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    return set()


class NotALiteral:
    """A field's default that is not a literal (exp_name's, the script's own name): what it is, only running says."""

    def __init__(self, source: str):
        self.source = source

    def __repr__(self) -> str:
        return self.source


def args_defaults(tree: ast.Module) -> dict:
    """{field: its default} of the script's Args dataclass, read from its source, each default as a literal
    (ast.literal_eval), or NotALiteral where it is an expression or absent."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Args":
            defaults = {}
            for n in node.body:
                if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                    try:
                        defaults[n.target.id] = ast.literal_eval(n.value) if n.value is not None else NotALiteral("none")
                    except ValueError:
                        defaults[n.target.id] = NotALiteral(ast.unparse(n.value))
            return defaults
    return {}


@functools.cache
def script_defaults(script: str, root: Path = ROOT) -> dict:
    """args_defaults of a script beside benchmark.sh (`script`: its file name), read once."""
    path = root / script
    return args_defaults(ast.parse(path.read_text(), filename=str(path)))


def environment_defaults(tree: ast.Module) -> tuple:
    """The script's module-level os.environ.setdefault(NAME, VALUE) calls, read from its source: (NAME, VALUE) pairs."""
    calls = [n.value for n in tree.body if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call)]
    return tuple(
        tuple(ast.literal_eval(a) for a in call.args) for call in calls if ast.unparse(call.func) == "os.environ.setdefault"
    )


def tooling(tree: ast.Module, path: Path) -> dict:
    """The script's module-level `TOOLING = {...}`, checked."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["TOOLING"]:
            try:
                fields = ast.literal_eval(node.value)
            except ValueError:
                raise VariantError(f"{path.name}: TOOLING must be a dict of literals") from None
            if not isinstance(fields, dict) or set(fields) - FIELDS:
                raise VariantError(f"{path.name}: TOOLING must be a dict with keys from {sorted(FIELDS)}")
            if (
                fields.get("framework") not in ("jax", "torch")
                or not isinstance(fields.get("order"), int)
                or "color" not in fields
            ):
                raise VariantError(f"{path.name}: TOOLING needs a framework ('jax' or 'torch'), an int order and a color")
            return fields
    raise VariantError(f"{path.name}: no TOOLING = {{...}} line; every variant script declares one (see ppo_jax_linen.py)")


def discover(root: Path = ROOT, algorithm: str = "ppo") -> list:
    """The variant scripts of one algorithm (ALGORITHMS), in their declared order, each followed by its settings (see
    SETTINGS). A variant is named without the algorithm: sac_jax_linen.py is jax_linen, as ppo_jax_linen.py is."""
    found = []
    for path in sorted(root.glob(f"{algorithm}_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        fields = tooling(tree, path)
        name = path.stem.removeprefix(f"{algorithm}_")
        settings = [(key, fields.pop(key)) for key in SETTINGS if key in fields]
        settings += [(STACKS, s) for s in fields.pop(STACKS, [])]
        num_seeds = "num_seeds" in args_fields(tree)
        configs = "configs" in args_fields(tree)
        script = Variant(
            name=name,
            script=path.name,
            compiles=fields.pop("compiles", None),
            num_seeds=num_seeds,
            configs=configs,
            defaults=environment_defaults(tree),
            **fields,
        )
        found.append((script.order, name, script))
        for key, s in settings:
            setting = dataclasses.replace(
                script,
                name=f"{name}+{s['tag']}",
                color=s["color"],
                compile_off_of=name if key == "compile_off" else None,
                flags=tuple(s.get("flags", "").split()),
                environment=tuple(s["environment"].split("=", 1)) if "environment" in s else (),
                setting_of=name,
                gpu_only=s.get("gpu_only", False) if key == STACKS else SETTINGS[key],
                stack=key == STACKS,
            )
            found.append((script.order, setting.name, setting))
    variants, colors = [], set()
    for _, _, v in sorted(found, key=lambda x: (x[0], x[2].setting_of is not None, x[1])):
        if v.color in colors:  # a copied script keeps its original's colour: give it one of its own
            v = dataclasses.replace(v, color=next(c for c in SPARE_COLORS + [f"C{i}" for i in range(10)] if c not in colors))
        colors.add(v.color)
        variants.append(v)
    return variants


def scripts(variants=None) -> list:
    """The variants that are scripts of their own (no settings)."""
    return [v for v in (discover() if variants is None else variants) if not v.setting_of]


def compile_pairs(variants=None) -> list:
    """The compile experiment's pairs (A, B), ordered by A: a compiled variant, and the same with its compilation
    off (a script of its own, or a setting) or with another setting of its script (torch.compile with CUDA graphs)."""
    variants = discover() if variants is None else variants
    order = {v.name: v.order for v in variants}
    pairs = [
        (v.compile_off_of or v.setting_of, v.name)
        for v in variants
        if (v.compile_off_of or v.setting_of) in order and not v.stack
    ]
    return sorted(pairs, key=lambda pair: (order[pair[0]], pair[0]))


def setting_name(variant: str, args: dict, variants=None, environment: Optional[dict] = None) -> str:
    """The name a run is reported under: its script's, or the script's setting whose flags its `args` show (and whose
    environment its `environment` shows: {NAME: value} as the record has it), the one that shows most where several
    do (a record of ppo_jax_nnx.py with cached_partial false: jax_nnx+nocache; of ppo_torch_compile.py with the torch
    backend and CUDA graphs: torch_compile+torchenv+graphs)."""
    shown = [
        (len(v.flags) + len(v.environment), v.name)
        for v in (discover() if variants is None else variants)
        if v.setting_of == variant
        and all(_shows(args, flag, value) for flag, value in _pairs(v.flags))
        and (not v.environment or has_words(environment or {}, *v.environment))
    ]
    return max(shown)[1] if shown else variant


def has_words(environment: dict, name: str, value: str) -> bool:
    """Does the variable `name` of `environment` hold every word of `value` (a setting's, added to the variable)?"""
    return set(value.split()) <= set(str(environment.get(name) or "").split())


def without_settings(name: str, value, variants=None):
    """A variable's value without the words the settings add to it (bench/run_records.run_setting: a setting is not
    another machine); None where nothing is left."""
    added = {
        w
        for v in (discover() if variants is None else variants)
        if v.environment[:1] == (name,)
        for w in v.environment[1].split()
    }
    kept = [w for w in str(value).split() if w not in added] if value else []
    return " ".join(kept) or None


def described(v: Variant) -> str:
    """How a setting is made from its script, for listings and reports: "jax_linen with XLA_FLAGS+=..."."""
    made = [*v.flags, *([f"{v.environment[0]}+={v.environment[1]}"] if v.environment else [])]
    return f"{v.setting_of} with {' '.join(made)}"


def _pairs(flags: tuple) -> list:
    """("--no-a", "--b", "3") -> [("--no-a", None), ("--b", "3")]."""
    pairs = []
    for token in flags:
        if token.startswith("--"):
            pairs.append((token, None))
        else:
            pairs[-1] = (pairs[-1][0], token)
    return pairs


def _shows(args: dict, flag: str, value) -> bool:
    """Does a record's args hold what this flag sets? --no-a: a is false; --b 3: b is 3; --c: c is true."""
    key = flag[2:].replace("-", "_")
    if value is not None:  # a number as the flag gives it or as the record prints it: "1e-3" and 0.001 alike
        return str(args.get(key)) == value or _number(args.get(key)) == _number(value) is not None
    if key.startswith("no_") and key not in args:
        return args.get(key[3:]) is False
    return args.get(key) is True


def _number(value):
    """A flag's or a record's value as a number, or None (not a number; a bool is not one)."""
    if isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def modules(script: Path, root: Optional[Path] = None) -> list:
    """The third-party packages a script imports at module level (what its interpreter must have), with those of the
    project's modules it imports so (benchback/'s), found from `root`, the script's folder by default."""
    root = root or script.parent
    tree = ast.parse(script.read_text())
    names, local = set(), []
    for node in tree.body:
        imported = []
        if isinstance(node, ast.Import):
            imported = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in imported:
            path = root.joinpath(*name.split("."))
            found = [p for p in (path.with_suffix(".py"), path / "__init__.py") if p.is_file()]
            local += found
            names.add(name.split(".")[0])
    for path in set(local) - {script}:
        names |= set(modules(path, root))
    project = {name for name in names if (root / f"{name}.py").is_file() or (root / name / "__init__.py").is_file()}
    return sorted(names - project - set(sys.stdlib_module_names))


def main() -> int:
    """The variants, one line each: what benchmark.sh, plot.py and the tests will find."""
    try:
        variants = discover(algorithm=sys.argv[1] if sys.argv[1:] in [[a] for a in ALGORITHMS] else "ppo")
    except VariantError as e:
        print(f"bench/variants.py: {e}", file=sys.stderr)
        return 2
    for v in variants:
        made = f"{described(v)}{' (GPU only)' * v.gpu_only}" if v.setting_of else v.script
        print(f"{v.name:<21} {v.framework:<6} {v.compiles or 'eager':<15} {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
