"""Compilations and compiler caches, counted for the record: how many programs a run compiled after its iteration 0
(compiles_after_first_iteration, which must be 0) and what the persistent caches answered.

Nothing is counted until a script calls count_compiles() (in its train, before it compiles anything): it registers
the listeners, once per process. record.Log refuses to start without it, so no run records a count it never made.
"""

import jax

COMPILES = []  # one entry per compilation in this process: XLA's (every script's envs are JAX), and dynamo's
# The persistent compilation cache's answers, where benchmark.sh turns it on (docs/method.md, "Compiler caches"). A hit
# loads the program instead of compiling it (jax/_src/compiler.py, compile_or_get_cached: the hit is recorded and no
# backend compile follows), so a hit counts as a compilation too: a program traced again after iteration 0 is found
# either way. A miss is recorded as its compiled program is written (compilation_cache.py, put_executable_and_time).
JAX_CACHE = {"hits": 0, "misses": 0}
COUNTING = set()  # what is counted: "jax", and "dynamo" once a torch.compile script asked


def count_xla_compile(event: str, duration: float, **_) -> None:
    if event == "/jax/core/compile/backend_compile_duration":
        COMPILES.append(event)


def count_cache_event(event: str, **_) -> None:
    for answer in ("hits", "misses"):
        if event == f"/jax/compilation_cache/cache_{answer}":
            JAX_CACHE[answer] += 1
            if answer == "hits":
                COMPILES.append(event)


def count_dynamo_compile(_) -> None:
    COMPILES.append("dynamo")


def count_compiles(dynamo: bool = False) -> None:
    """Count every compilation from here on: XLA's, through jax.monitoring's listeners, and with `dynamo` each dynamo
    compilation (a frame (re)compiled, a lazy backward compiled, a CUDA graph recorded) through torch's start callbacks.
    Once per process: a second call adds nothing, or two scripts loaded in one process (the tests) would count each
    compilation twice (jax.monitoring and dynamo's callback_handler keep lists)."""
    if "jax" not in COUNTING:
        jax.monitoring.register_event_duration_secs_listener(count_xla_compile)
        jax.monitoring.register_event_listener(count_cache_event)
        COUNTING.add("jax")
    if dynamo and "dynamo" not in COUNTING:
        import torch

        torch._dynamo.callback_handler.register_start_callback(count_dynamo_compile)
        COUNTING.add("dynamo")


def compiler_caches(inductor: bool = False) -> dict:
    """Whether this process read and wrote persistent compiler caches, and what it found there. A hit loads the very
    program a miss compiled and wrote, so only the compile time differs: JAX's executable (jax/_src/compilation_cache.py:
    get_executable_and_time deserializes what put_executable_and_time serialized), and with `inductor` (the torch
    scripts) Inductor's generated code for the same graph, inputs, config and versions (torch/_inductor/codecache.py:
    FxGraphCache's key hashes them, _lookup_graph loads the module it wrote), whose counters these are. Dynamo traces
    every run anew."""
    persistent = jax.config.jax_compilation_cache_dir is not None
    if not inductor:
        return {"persistent": persistent, "jax": dict(JAX_CACHE)}
    import torch

    counters = torch._dynamo.utils.counters["inductor"]
    return {
        "persistent": persistent and not torch.compiler.config.force_disable_caches,
        "jax": dict(JAX_CACHE),
        "inductor": {"hits": counters["fxgraph_cache_hit"], "misses": counters["fxgraph_cache_miss"]},
    }
