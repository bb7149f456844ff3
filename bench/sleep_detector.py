"""gpu-check's sleep detector (bench/gpu_check.py): a host sync in a timed iteration on a GPU that the traps cannot
see, found by timing the last iteration queued behind a long sleep on the device."""

import contextlib
import time
from typing import Optional

from bench.gpu_preflight import SKIPPED

# ---------------------------------------------------------------- the sleep detector
# Waits for its result that a compiling API makes by design on every call, by TOOLING's "compiles": eqx.filter_jit
# blocks on a marker output before it returns, to raise Equinox's runtime errors (equinox/_jit.py, _call). One such
# call per timed iteration ends the iteration where its final sync would: allowed once, and named in the verdict.
RESULT_WAITS = {"eqx.filter_jit": "eqx.filter_jit's own wait for its result"}


def sleep_verdict(
    sleep_s: float, reached_s: float, returned_s: float, margin_s: float, waits: tuple = (), allowed: Optional[str] = None
) -> str:
    """The sleep detector's decision, all times in seconds from the moment the sleep was queued on the idle device: the
    sleep as the device measured it, when the host reached the iteration's final sync, when that sync returned, and
    how early the host must have arrived. The sleep ends at sleep_s or later, so a host that waited for the device on
    the way arrived after that; an iteration queued behind the sleep cannot end before it. `waits`: when the host began
    each wait for a JAX array before the final sync; `allowed` names the one wait that may come first (RESULT_WAITS),
    which then stands for the final sync: the host must have reached it early."""
    where = "the final sync"
    if len(waits) > (1 if allowed else 0):
        return (
            f"FAIL: the host waited for an array {len(waits)} time(s) before the final sync, first {waits[0]:.3f} s "
            f"into a {sleep_s:.3f} s sleep"
        )
    if waits:
        reached_s, where = waits[0], f"its first wait ({allowed})"
    if returned_s < sleep_s:
        return f"FAIL: the iteration ended {returned_s:.3f} s into a {sleep_s:.3f} s sleep: it did not wait for it"
    if reached_s > sleep_s - margin_s:
        return (
            f"FAIL: the host reached {where} {reached_s:.3f} s into a {sleep_s:.3f} s sleep: something waited "
            "for the device on the way (a host sync, or a full queue; in a JAX program, a lax.cond or while loop"
            " outside XLA's command buffers reads its predicate back: docs/gpu.md)"
        )
    return f"ok ({reached_s:.3f} s of a {sleep_s:.3f} s sleep" + (f"; first wait: {allowed})" if waits else ")")


class SleepDetector:
    """A host sync in a timed iteration on a GPU that the traps cannot see (cudaDeviceSynchronize, an event's wait,
    XLA's own waits), found by timing. Queued between the last two iterations, a long sleep on the device
    (torch.cuda._sleep, a kernel that spins for a number of clock cycles, calibrated here) holds back all the last
    iteration's work, which the host queues without waiting: it should reach the iteration's final sync long before the
    sleep ends. If it arrives after, something on the way waited for the device.

    The torch scripts queue their work behind the sleep on torch's stream, and JAX's through the DLPack hand-overs.
    The JAX scripts get the sleep the same way, by construction: a tensor made after it is handed to JAX, whose
    from_dlpack passes its external-ready-event stream to torch's __dlpack__, which makes that stream wait for torch's
    (torch/_tensor.py); XLA records the buffer's definition event on that stream (CreateViewOfDeviceBuffer,
    xla/pjrt/pjrt_stream_executor_client.cc): the wait attaches to the buffer, not to JAX's compute stream. A small JAX
    program reads the buffer, so the device's one compute stream waits for the event, and every program queued after,
    the iteration's included, runs after it (the same file's notes: one stream for compute). The verdict checks that
    the iteration did end after the sleep.

    Not measured: an eager JAX loop (linen_nojit, a program per op). XLA's GPU client keeps at most 32 programs queued
    ahead of the device (max_inflight_computations, xla/pjrt/plugin/xla_gpu/xla_gpu_client_options.h), so such a loop
    waits for a sleeping device by design. CUDA's launch queue is finite too (about a thousand kernels a stream, as
    reported on NVIDIA's forums, not documented): hence the small iterations of SHORT.

    A wait for a JAX array before the final sync (an array's block_until_ready: the host waits for the device) is
    counted too, in every framework: none is allowed, but for one that the script's compiling API makes by design
    (RESULT_WAITS), which must then be reached early, as the final sync must."""

    CALIBRATION_CYCLES = 1_000_000

    def __init__(self, framework: str, allowed_wait: Optional[str] = None):
        import torch

        self.torch, self.framework, self.allowed_wait = torch, framework, allowed_wait
        self.armed = self.reached = self.returned = None
        self.waits = []  # when each wait for an array began, between the sleep and the final sync
        self.hold = []  # buffers handed to JAX, kept until the device is done with them (ppo_torch.py's rollout says why)

    def prepare(self):
        """The sleep's clock rate (the median of 5, as torch's tests calibrate it); for JAX, the reading program compiled."""
        torch, rates = self.torch, []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(self.CALIBRATION_CYCLES)
            end.record()
            end.synchronize()
            rates.append(self.CALIBRATION_CYCLES / (start.elapsed_time(end) / 1000))
        self.cycles_per_s = sorted(rates)[2]
        if self.framework == "jax":
            import jax

            self.read = jax.jit(lambda x: x + 1)
            self.hand_over().block_until_ready()

    def hand_over(self):
        """A tensor made after all torch's queued work, handed to JAX and read by a JAX program."""
        import jax

        marker = self.torch.zeros(1, device="cuda")
        imported = jax.dlpack.from_dlpack(marker)
        self.hold += [marker, imported]
        return self.read(imported)

    def arm(self, duration: float):
        """Sleep through the next iteration: 20 times this one's duration, 0.5 to 10 s."""
        torch = self.torch
        self.events = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        self.armed = time.perf_counter()
        self.events[0].record()
        torch.cuda._sleep(int(min(max(20 * duration, 0.5), 10.0) * self.cycles_per_s))
        self.events[1].record()
        if self.framework == "jax":
            self.hold.append(self.hand_over())

    def log_hook(self, original):
        """Log.iteration, which the scripts call after each iteration (Log.timed has kept its duration), outside its
        timed region."""

        def iteration(log, metrics):
            if len(log.durations) == 1:  # before the script counts iteration 0's compilations: the reading program's is one
                self.prepare()
            original(log, metrics)
            if len(log.durations) == log.num_iterations - 1:
                self.arm(log.durations[-1])

        return iteration

    def wait_hook(self, original):
        """An array's own block_until_ready (eqx.filter_jit's wait, or any other), counted between sleep and final sync;
        the final sync's own waits for its arrays (it may call this for a single array) come after `reached` is set."""

        def wait(array):
            if self.armed is not None and self.reached is None:
                self.waits.append(time.perf_counter())
            return original(array)

        return wait

    def sync_hook(self, original):
        """The iteration's final sync (torch scripts: synchronize; JAX scripts: jax.block_until_ready), timed."""

        def synced(*args, **kwargs):
            if self.armed is None or self.reached is not None:
                return original(*args, **kwargs)
            self.reached = time.perf_counter()
            result = original(*args, **kwargs)
            self.returned = time.perf_counter()
            return result

        return synced

    def verdict(self) -> str:
        if self.returned is None:
            return "FAIL: the iteration with the sleep never reached its final sync"
        self.events[1].synchronize()
        sleep = self.events[0].elapsed_time(self.events[1]) / 1000
        waits = tuple(t - self.armed for t in self.waits)
        return sleep_verdict(sleep, self.reached - self.armed, self.returned - self.armed, sleep / 2, waits, self.allowed_wait)


def detector_skipped(spec, gpu: bool) -> Optional[str]:
    """Why the sleep detector cannot run for this variant here, or None."""
    if not gpu:
        return SKIPPED
    if spec.framework == "jax" and not spec.compiles:
        return "skipped: eager JAX waits for a sleeping device by design (at most 32 programs queued)"
    try:
        import torch
    except ImportError:
        torch = None
    if torch is None or not torch.cuda.is_available():
        return "skipped: its device sleep needs torch with CUDA"
    return None


@contextlib.contextmanager
def sleep_detector(module, spec, gpu: bool):
    """Yields a dict whose "verdict" is set on leaving: the detector's, or why it was skipped."""
    outcome = {"verdict": detector_skipped(spec, gpu)}
    if outcome["verdict"]:
        yield outcome
        return
    import jax
    from jax._src.array import ArrayImpl  # the class of every JAX array; its block_until_ready is the host's wait

    detector = SleepDetector(spec.framework, RESULT_WAITS.get(spec.compiles))
    final_sync = (module, "synchronize") if spec.framework == "torch" else (jax, "block_until_ready")
    hooks = [
        (module.record.Log, "iteration", detector.log_hook),
        (*final_sync, detector.sync_hook),
        (ArrayImpl, "block_until_ready", detector.wait_hook),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in hooks]
    try:
        for (owner, name, hook), (_, _, original) in zip(hooks, originals):
            setattr(owner, name, hook(original))
        yield outcome
    finally:
        for owner, name, original in originals:
            setattr(owner, name, original)
    outcome["verdict"] = detector.verdict()
