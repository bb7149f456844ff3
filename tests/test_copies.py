"""Above the harness line, the scripts of one framework hold the same copy of what they do alike: a function or class
that two of them define under one name is the same text in both, unless it is one that the variant changes (its
network, how it rolls out and updates, its train). A diff of two variants then shows only what the framework changes."""

import pytest

from conftest import SCRIPTS, framework, script_parts

# What each variant writes its own way: its arguments, its network, what the carry holds, and the functions that
# use its framework's API (linen_nojit's compute_gae scans in Python; torch_compile's minibatch_step clips per parameter).
OWN = {
    "jax": {"Args", "Agent", "MLP", "Carry", "compute_gae", "rollout", "update", "train"},
    "torch": {"Args", "minibatch_step", "train"},
}


def ppo_part(variant: str) -> dict:
    """{name: source} of the top-level functions and classes above the harness line."""
    return script_parts(variant, below=False)


def differing(parts: dict) -> dict:
    """{name: variants whose copy differs from the framework's first script's} for the names not in OWN."""
    found = {}
    for fw in ("jax", "torch"):
        group = [v for v in parts if framework(v) == fw]
        for name in set.union(*(set(parts[v]) for v in group)) - OWN[fw]:
            having = [v for v in group if name in parts[v]]
            differ = [v for v in having[1:] if parts[v][name] != parts[having[0]][name]]
            if differ:
                found[name] = differ
    return found


def test_what_the_scripts_of_a_framework_do_alike_is_one_copy():
    assert not differing({v: ppo_part(v) for v in SCRIPTS})


@pytest.mark.parametrize("name", ["ppo_loss", "act", "Carry", "rollout", "make_batch", "Transition"])
def test_an_edit_to_one_copy_is_found(name):
    """The check above cannot pass by mistake: a shared copy edited in one script is reported."""
    parts = {v: ppo_part(v) for v in SCRIPTS}
    variant = next(v for v in reversed(SCRIPTS) if name in parts[v] and name not in OWN[framework(v)])
    parts[variant] = {**parts[variant], name: parts[variant][name].replace("(", "( ", 1)}
    assert differing(parts) == {name: [variant]}
