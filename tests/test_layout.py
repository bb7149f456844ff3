"""A script shows its framework: the compile call its TOOLING names stands inside `train`, and from `train` to the
environment's step a reader follows at most four of the script's own functions (CleanRL's loop takes one, PureJaxRL's
three)."""

import ast
import inspect

import pytest

from conftest import DECLARED, QUIET, ROOT, SCRIPTS, VARIANTS, framework, load

MOST_CALLS = 4


def dotted(node) -> str:
    """`jax.jit` for the expression jax.jit, '' for anything but a chain of names."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := dotted(node.value)):
        return f"{base}.{node.attr}"
    return ""


def calls_in_train(source: str) -> set:
    """The dotted names train() calls, anywhere in its body (its nested functions and lambdas included)."""
    train = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "train")
    return {dotted(node.func) for node in ast.walk(train) if isinstance(node, ast.Call)} - {""}


COMPILED = [v for v in VARIANTS if DECLARED[v].compiles]


@pytest.mark.parametrize("variant", COMPILED)
def test_the_compile_call_stands_in_train(variant):
    source = (ROOT / SCRIPTS[variant]).read_text()
    assert DECLARED[variant].compiles in calls_in_train(source), f"{SCRIPTS[variant]}: train does not call it"


def test_a_compile_call_moved_out_of_train_is_found():
    """The check above can fail: the same call in a helper that train calls is not in train."""
    inside = "def train(args):\n    iterate = jax.jit(iteration)\n"
    outside = "def compiled(f):\n    return jax.jit(f)\n\n\ndef train(args):\n    iterate = compiled(iteration)\n"
    assert "jax.jit" in calls_in_train(inside) and "jax.jit" not in calls_in_train(outside)


def recorder(script: str, stepped):
    """(seen, step): step calls `stepped` (the environment's step), and on its first call puts in `seen` the script's
    own functions on the stack, outermost first: from train to the one that calls it. python_scan stands in for
    lax.scan (linen_nojit): not counted."""
    seen = []

    def step(*args, **kwargs):
        if not seen:
            stack = [f for f in inspect.stack(0) if f.filename == script and f.function != "python_scan"]
            seen.append([f.function for f in reversed(stack)])
        return stepped(*args, **kwargs)

    return seen, step


@pytest.mark.parametrize("variant", [pytest.param(v, marks=pytest.mark.slow) if v == "linen_nojit" else v for v in VARIANTS])
def test_at_most_four_calls_from_train_to_the_environment_step(variant, monkeypatch):
    """JAX: gymnax's env.step, vmapped in the rollout's scan. torch: envs.step, the environments' interface that its
    rollout calls (gymnax's behind it, or torch_envs.py's)."""
    module = load(variant)
    script, seen = str(ROOT / SCRIPTS[variant]), []
    if framework(variant) == "jax":
        make_env = module.harness.make_env

        def patched(env_id):
            env, params = make_env(env_id)
            found, env.step = recorder(script, env.step)
            seen.append(found)
            return env, params

        monkeypatch.setattr(module.harness, "make_env", patched)
    else:
        found, step = recorder(script, module.GymnaxEnvs.step)
        seen.append(found)
        monkeypatch.setattr(module.GymnaxEnvs, "step", step)
    args = module.Args(cuda=False, num_envs=4, num_steps=8, num_minibatches=2, update_epochs=1, total_timesteps=32, **QUIET)
    module.train(args)
    ((frames,),) = [found for found in seen if found]
    assert frames[0] == "train" and len(frames) <= MOST_CALLS, frames
