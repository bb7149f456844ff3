#!/usr/bin/env bash
# benchback sweep: every PPO variant script over environments x model sizes x repeats.
#
#   bash benchmark.sh                                # the original study's GPU sweep (--preset full)
#   bash benchmark.sh --preset cpu                   # the study's answer on 2 CPU cores (--dry-run: its estimated time)
#   bash benchmark.sh --help                         # every preset, experiment and option (bench/usage.txt)
#
# Environment: PYTHON (default python3) is the interpreter the variant scripts run under.
set -euo pipefail

# A shell that starts with SIGINT ignored (a script's background job) cannot trap it, yet its runs would not ignore
# it: timeout(1) catches it and the exec resets it, so a Ctrl-C to the group would kill the run in flight, record it
# as a crash and go on. Started so, the sweep starts again with SIGINT at its default, and stops on it as any sweep
# does (on_signal). SIGHUP stays as given: under nohup a sweep outlives its terminal.
if [[ -n $(trap -p INT) ]]; then exec env --default-signal=INT bash "${BASH_SOURCE[0]}" "$@"; fi

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
# bench/plan.py checks the arguments, holds the presets and makes the plan; this file runs it.
PLAN=$ROOT/bench/plan.py
# Compiler caches. A run of the compile or learn experiment (or any, with --caches cold) compiles from cold, as JAX
# does by default: torch.compile would otherwise reuse kernels cached on disk by earlier runs, and its iteration 0 would
# measure the cache. Triton's own cache (~/.triton/cache) this does not turn off: each such run gets its own empty Triton
# and Inductor cache directories, removed when it ends (run_one). The other experiments time steady iterations, which
# compiling does not touch: they share the caches in OUT/.caches (WARM_ENV, bench/plan.py), so that only a cell's first
# run compiles and the rest load its programs (docs/method.md).
export TORCH_COMPILE_FORCE_DISABLE_CACHES=1

usage() { cat "$ROOT/bench/usage.txt"; }

die() { echo "benchmark.sh: $*" >&2; exit 2; }

# ---------------------------------------------------------------- the plan
# load_plan ARGS...: bench/plan.py checks ARGS (else it says why in one line, and this exits 2) and prints what they
# choose as assignments: the options (OUT absolute, JOBS, DEVICES, ...), the preset's TIMEOUT, NUM_ENVS and NUM_STEPS,
# VARIANTS and the MODULES they import, CHECK_ROWS (gpu-check's), USER_ENVS (--envs, to check), COST_ENVS
# (bench/env_cost.py's), HANDOVER_ENVS (bench/host_cost.py's), and RUNS, one tab-separated line per run in the order they run
# (see run); for a sweep, TODO (the indices of the runs not done), INTRO (its first lines: the runs and their estimated
# duration) and, with --list or --dry-run, the LISTING.
load_plan() {
  local plan
  "$PYTHON" -c '' 2>/dev/null || die "cannot run PYTHON=$PYTHON (set PYTHON to the project's interpreter)"
  plan=$("$PYTHON" "$PLAN" plan "$@") || exit 2
  eval "$plan"
}

# run I: the fields of RUNS[I] (the plan's run I + 1) into R_NAME, R_SCRIPT, ... (no field but R_FLAGS is empty).
run() { IFS=$'\t' read -r R_NAME R_SCRIPT R_ENV R_HIDDEN R_SEED R_EXP R_SIZE R_ITERATIONS R_FLAGS <<<"${RUNS[$1]}"; }
name_of() { echo "${RUNS[$1]%%$'\t'*}"; }

# ---------------------------------------------------------------- what plan.py cannot check (one line, exit 2)
# check_python: PYTHON has what the chosen variants import.
check_python() {
  local missing
  missing=$("$PYTHON" -c 'import importlib.util, sys; print(*sorted({m for m in sys.argv[1:] if not importlib.util.find_spec(m)}))' \
    "${MODULES[@]}") || die "PYTHON=$PYTHON failed to look up its packages"
  [[ -z $missing ]] || die "PYTHON=$PYTHON cannot import: $missing (activate the project's virtual environment, or set PYTHON to its interpreter)"
}

# check_envs: the --envs ids are environments the scripts train (every run of another id would fail).
check_envs() {
  ((${#USER_ENVS[@]})) || return 0
  local bad
  bad=$("$PYTHON" "$PLAN" check-envs "${USER_ENVS[@]}") || die "PYTHON=$PYTHON failed to check --envs"
  [[ -z $bad ]] || die "--envs: $bad"
}

# check_out: OUT exists and is writable, or can be made where the nearest existing directory is writable.
check_out() {
  local bad
  bad=$("$PYTHON" "$PLAN" check-out "$OUT") || die "PYTHON=$PYTHON failed to check --out"
  [[ -z $bad ]] || die "--out $OUT cannot be written: $bad"
}

# check_same_machine: no runs added to an OUT whose timings came from another CPU model or another GPU: a sweep
# resumed there would pair, in one block, runs timed on two machines.
check_same_machine() {
  local found
  found=$("$PYTHON" "$PLAN" other-machine "$OUT") || return 0
  [[ -z $found ]] || die "$OUT holds timings from another machine or setting ($found): give another --out"
}

# ---------------------------------------------------------------- one sweep per OUT
# A sweep holds OUT/logs/sweep.lock (flock) for its life, and --task runs share it: two sweeps on one OUT would time
# their runs side by side, each slowing the other. The lock is inherited by every process the sweep starts, so a run
# left going after its sweep's shell was killed still holds it, and a resume is refused until that run ends rather
# than timing beside it. The kernel drops the lock with the last process: a dead sweep never leaves a stale lock.
OUT_LOCK=
lock_out() {  # lock_out -x|-s: take OUT's lock, exclusive (a sweep) or shared (--task), else exit 2 naming who holds it
  local lock=$OUT/logs/sweep.lock
  mkdir -p "$OUT/logs"
  exec {OUT_LOCK}>>"$lock"
  flock -n "$1" "$OUT_LOCK" || die "--out $OUT is in use by $(holder "$lock"); wait for it to end, or give another --out"
  [[ $1 == -s ]] || printf '%s %s\n' "$$" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" >"$lock"  # for a second sweep's message
}

holder() {  # holder LOCK: the sweep that holds it (pid and start, from the file), or --task runs (they share it)
  local fd pid= start=
  exec {fd}>>"$1"
  if flock -n -s "$fd"; then exec {fd}>&-; echo "--task runs of another process"; return; fi
  exec {fd}>&-
  read -r pid start <"$1" || true
  if [[ -z $pid ]]; then echo "another sweep"
  elif kill -0 "$pid" 2>/dev/null; then echo "the sweep pid $pid (started $start)"
  else echo "a run of the sweep pid $pid (started $start), whose shell has ended while its run goes on"; fi
}

# ---------------------------------------------------------------- one run
# A run is claimed with flock on OUT/logs/NAME.lock before it starts; the run inherits the lock, so it is held
# until the run's process ends, even if the shell that started it was killed, and the kernel drops it with the
# process: a killed run never leaves a stale claim. Two processes given the same run (--task, --jobs, a sweep)
# thus never run it at once, and the second finds the first's record and skips.
SWEEP_START=${EPOCHREALTIME//[!0-9]/}  # microseconds, before plan.py reads the records

# record_status INDEX: ok | failed | stale | corrupt | missing, the plan's run I's record as plan.py reads it.
record_status() { "$PYTHON" "$PLAN" status "$OUT/$(name_of "$1").json" "${RUNS[$1]}"; }
# is_done STATUS: only "ok" and (without --retry-failed) "failed" are done; a corrupt file, or one made with other
# settings than the plan gives the run (stale), is run again and replaced.
is_done() { [[ $1 == ok || ($1 == failed && $RETRY_FAILED == 0) ]]; }

now_s() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((t / 1000000)); }  # locale-proof: digits only
hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }

# stop_run: stop what this shell runs in the background (a run, or the sweep's slots, which stop theirs). Every
# background job, not a stored pid: a signal can arrive between starting the run and storing its pid.
stop_run() {
  local pids
  pids=$(jobs -p)
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086  # one pid per word
  kill -TERM $pids 2>/dev/null || true
  wait 2>/dev/null || true
}

# The compiler cache directory of the run in flight (run_one), removed when the run ends, however it ends: here, or
# on a signal (on_signal, start_slot). A sweep killed outright (SIGKILL) leaves it in TMPDIR.
RUN_CACHE=
drop_cache() { [[ -z $RUN_CACHE ]] || rm -rf "$RUN_CACHE"; RUN_CACHE=; }

# run_one INDEX: run it under the time limit; print the outcome; on failure write the record.
run_one() {
  run "$1"
  local file="$OUT/$R_NAME.json" log="$OUT/logs/$R_NAME"
  # shellcheck disable=SC2206  # R_FLAGS holds space-free flags; splitting them is intended
  local cmd=("$PYTHON" "$ROOT/$R_SCRIPT" --env-id "$R_ENV" --hidden "$R_HIDDEN" --seed "$R_SEED" --exp-name "$R_EXP"
             --json-out "$file" --no-tensorboard --quiet $R_FLAGS)
  mkdir -p "$(dirname "$file")" "$(dirname "$log")"
  local start rc=0 duration reason
  RUN_CACHE=$(mktemp -d -t benchback-run.XXXXXX) || { echo "FAILED: cannot make a temporary directory (TMPDIR)"; return 1; }
  start=$(now_s)
  # In the background so that a signal to this script is handled at once (see on_signal), not
  # after the run. --foreground keeps the run in our process group, so killing the group (a
  # crash, a CI job cancelled) kills the run too rather than leaving it behind; the run is
  # killed 30 s after its limit if it ignores the TERM. Its compiler caches are its own, and empty, or the
  # sweep's (see "Compiler caches" above). A cold run has a TMPDIR of its own too: Inductor keeps its precompiled C++
  # header in TMPDIR/torchinductor_USER, outside its cache directory on purpose (torch/_inductor/codecache.py, _HEADER_DIR).
  local caches=(TORCHINDUCTOR_CACHE_DIR="$RUN_CACHE/inductor" TRITON_CACHE_DIR="$RUN_CACHE/triton" TMPDIR="$RUN_CACHE")
  [[ " ${WARM_EXPERIMENTS[*]} " != *" $R_EXP "* ]] || caches=(-u TORCH_COMPILE_FORCE_DISABLE_CACHES "${WARM_ENV[@]}")
  # A setting made by the environment (XLA's command buffers for loops): its value after the variable's own.
  local variant=${R_NAME#*/} setting=() pair name
  variant=${variant%%__*}
  for pair in "${SETTING_ENVIRONMENTS[@]}"; do
    [[ ${pair%%=*} == "$variant" ]] || continue
    pair=${pair#*=} name=${pair%%=*}
    setting=("$name=${!name:+${!name} }${pair#*=}")
  done
  env "${caches[@]}" "${setting[@]}" timeout --foreground --kill-after=30 "$TIMEOUT" "${cmd[@]}" >"$log.stdout" 2>"$log.stderr" &
  wait $! || rc=$?
  drop_cache
  duration=$(($(now_s) - start))
  if ((rc == 0)) && [[ $(record_status "$1") == ok ]]; then
    echo "ok in ${duration}s"; return 0
  fi
  if ((rc == 0)); then reason="no-result"  # exited cleanly without a valid JSON record
  elif ((rc == 124 || duration >= TIMEOUT)); then reason="timeout"
  elif ((rc == 2)); then reason="usage"
  elif ((rc == 137)) || grep -qiE 'out of memory|RESOURCE_EXHAUSTED|MemoryError|OutOfMemory' "$log.stderr"; then
    reason="oom"  # 137 = SIGKILL, which is what the kernel's OOM killer sends
  else reason="crash"; fi
  "$PYTHON" "$PLAN" failure "$file" "$reason" "$rc" "$duration" "$TIMEOUT" "$log.stderr" "${cmd[@]}" ||
    echo -n "(failure record not written) "
  echo "FAILED ($reason, exit code $rc) in ${duration}s: see $log.stderr"
  return 1
}

# claim_and_run INDEX: run it unless it is done or another process holds its claim. Returns 0 (ran,
# ok), 1 (ran, failed) or 3 (skipped). A failure record from before this process started is done unless
# --retry-failed; one written since (by a process that claimed the run first) is done either way.
claim_and_run() {
  local name fd status rc=0
  name=$(name_of "$1")
  local file="$OUT/$name.json" lock="$OUT/logs/$name.lock"
  mkdir -p "$(dirname "$lock")"
  exec {fd}>>"$lock"
  if ! flock -n "$fd"; then
    exec {fd}>&-; echo "skipped: another process is running it (it holds $lock)"; return 3
  fi
  status=$(record_status "$1")
  # An ok record of a block begun on another machine is replaced (REDO, bench/plan.py), unless made since this began
  [[ $status != ok || " ${REDO[*]} " != *" $1 "* ]] || (($(date -r "$file" +%s%6N) >= SWEEP_START)) || status=redo
  if [[ $status == ok || $status == failed ]] && { is_done "$status" || (($(date -r "$file" +%s%6N) >= SWEEP_START)); }; then
    exec {fd}>&-; echo "skipped: already done ($status)"; return 3
  fi
  [[ -z $TASK ]] || cpu_turn
  run_one "$1" || rc=$?
  exec {fd}>&-
  [[ -z $CPU_TURN ]] || { exec {CPU_TURN}>&-; CPU_TURN=; }
  return "$rc"
}

# On a CPU, the --task runs of one OUT on one machine take turns: side by side each would slow the other's timing,
# and their records would not say so. On a GPU each task has a device of its own.
CPU_TURN=
cpu_turn() {
  ! nvidia-smi -L >/dev/null 2>&1 || return 0
  exec {CPU_TURN}>>"$OUT/logs/cpu-$(hostname).lock"
  flock -n "$CPU_TURN" && return 0
  echo "waiting: another --task of this OUT is running on this machine's CPU (tasks on one CPU take turns)"
  flock "$CPU_TURN"
}

# ---------------------------------------------------------------- the sweep, --task
RAN=0 FAILED=0 FAILURES=() MSG=
SKIPPED=0 OLD_FAILED=0 TODO=() REDO=()  # plan.py's for a sweep: done before it started, failure records among them, the
# rest, and among those, the ok records of blocks begun on another machine

summary() {
  echo "summary: ran $RAN, skipped $SKIPPED (already done), failed $FAILED; results in $OUT"
  ((OLD_FAILED == 0)) || echo "  $OLD_FAILED of the skipped are failure records from before; --retry-failed reruns them"
  local f; for f in "${FAILURES[@]}"; do echo "  failed: $f"; done
  return 0
}

# on_signal: a signal (Ctrl-C, kill, a closed terminal) stops the run in flight and ends the sweep with its summary.
# While it does, further signals are ignored, by this shell and by the processes it starts (a second Ctrl-C reaches
# the run, which it ends sooner): the summary is printed whatever comes.
on_signal() {
  trap '' INT TERM HUP
  stop_run
  drop_cache  # --task's run; the sweep's slots drop their own
  [[ -z $MSG ]] || rm -rf "$MSG"
  # A run may have written its record and been stopped while its process exited: that record is whole, and kept.
  local s name kept=() what="run in flight was"; ((JOBS == 1)) || what="runs in flight were"
  for s in "${!SLOT_PID[@]}"; do
    [[ -n ${SLOT_PID[s]} ]] || continue
    name=$(name_of "${SLOT_RUN[s]}")
    [[ $(record_status "${SLOT_RUN[s]}") != ok ]] || kept+=("$name")
  done
  echo
  if ((${#kept[@]})); then
    echo "interrupted: ${kept[*]} had finished (its record is kept), any other run in flight was stopped and wrote" \
      "nothing; rerun the same command to resume"
  else
    echo "interrupted: the $what stopped and wrote nothing; rerun the same command to resume"
  fi
  summary
  exit 130
}

measure_env_costs() {
  # The env-complexity x-axis of plot.py, at the training --num-envs of the timing experiments; and the floor under
  # the torch scripts' rollout (env steps and hand-overs, no network), which plot.py splits off their sync runs, with
  # the host's per-call costs and a trace of one torch iteration beside it (bench/host_cost.py).
  local rc=0
  if ((${#COST_ENVS[@]})); then  # (none where only the stacks experiment is timed; its floor is measured all the same)
    echo "before the first run, each environment's cost per step (bench/env_cost.py): ${COST_ENVS[*]}"
    # In the background, as the runs are (run_one): a signal is handled at once, and stops the measuring too.
    "$PYTHON" "$ROOT/bench/env_cost.py" --out "$OUT/env_cost.json" --num-envs "$NUM_ENVS" "${COST_ENVS[@]}" &
    wait $! || rc=$?
    ((rc != 2)) || die "bad --envs (see the error above); nothing was run"
    ((rc == 0)) || echo "warning: bench/env_cost.py failed (exit code $rc); plot.py will order environments by name"
  fi
  ((${#HANDOVER_ENVS[@]})) || return 0
  rc=0
  # Its table and torch's warnings go to a log, which a failure shows: a sweep's screen is for its runs.
  local log=$OUT/logs/host_cost.log
  echo "host costs under the torch rollout (bench/host_cost.py, about a minute): ${HANDOVER_ENVS[*]}"
  "$PYTHON" "$ROOT/bench/host_cost.py" --out "$OUT/host_cost.json" --num-envs "$NUM_ENVS" --num-steps "$NUM_STEPS" \
    "${HANDOVER_ENVS[@]}" >"$log" 2>&1 &
  wait $! || rc=$?
  if ((rc == 0)); then
    echo "host costs: $OUT/host_cost.json (the table: $log)"
  else
    tail -n 5 "$log"
    echo "warning: bench/host_cost.py failed (exit code $rc, $log); plot.py will not split the torch rollouts"
  fi
}

# sweep: the serial sweep (PARALLEL=0: one run at a time) or --jobs/--devices; with --dry-run, the plan only.
sweep() {
  if ((DRY_RUN)); then printf '%s%s' "$INTRO" "$LISTING"; return 0; fi
  lock_out -x
  echo "$PRESET" >"$OUT/logs/preset"  # what bench/plan.py checks: a sweep of another preset goes to another OUT
  printf '%s' "$INTRO"
  # The scripts' atomic writes leave .tmp-* files only if killed mid-write, and a sweep killed outright its slots'
  # folder: never results. Under OUT's lock no other sweep or task writes in OUT, so every one of them goes.
  find "$OUT" -name '.tmp-*.json' -delete
  rm -rf "$OUT"/logs/.slots.*
  MSG=$(mktemp -d "$OUT/logs/.slots.XXXXXX")  # in OUT, not TMPDIR: only the runs' caches ever go there
  trap on_signal INT TERM HUP
  ((${#TODO[@]} == 0)) || measure_env_costs  # with the runs they belong to: a finished sweep measures nothing again
  run_plan
}

# remaining: the elapsed and remaining time of run_plan (its t0, finished and n_ran): runs still to do times the
# mean interval between finished runs (parallel ones overlap).
remaining() {
  local elapsed=$(($(now_s) - t0)) eta="?"
  ((n_ran == 0)) || eta=$(hms $((elapsed * (${#TODO[@]} - finished) / n_ran)))
  echo "elapsed $(hms "$elapsed"), remaining ~$eta"
}

# run_plan: the runs TODO, JOBS at a time, slot s on device DEVICES[s % number of devices]. Each run is a
# background subshell that writes its outcome to MSG/s.out and its exit code to MSG/s.rc, so that a signal
# reaches this shell at once (on_signal) however many run. The serial sweep says which run starts ("[I/N] ...
# NAME ... ", I its index in the plan), then how it ended; --jobs prints one line as each run ends.
SLOT_PID=() SLOT_RUN=() SLOT_DEV=()
run_plan() {
  local total=${#RUNS[@]} s i rc msg name next=0 busy=0 finished=0 n_ran=0 t0
  t0=$(now_s)
  while ((next < ${#TODO[@]} || busy > 0)); do
    for ((s = 0; s < JOBS && next < ${#TODO[@]}; s++)); do
      [[ -z ${SLOT_PID[s]-} ]] || continue
      i=${TODO[next]}
      ((PARALLEL)) || printf '[%d/%d] %s  %s ... ' $((i + 1)) "$total" "$(remaining)" "$(name_of "$i")"
      start_slot "$s" "$i"; ((++next)); ((++busy))
    done
    wait -n 2>/dev/null || true
    for ((s = 0; s < JOBS; s++)); do
      [[ -n ${SLOT_PID[s]-} ]] || continue
      if [[ -e $MSG/$s.rc ]]; then rc=$(<"$MSG/$s.rc")
      elif kill -0 "${SLOT_PID[s]}" 2>/dev/null; then continue
      else rc=1; echo "FAILED: its worker died" >>"$MSG/$s.out"; fi
      wait "${SLOT_PID[s]}" 2>/dev/null || true
      msg=$(tail -n 1 "$MSG/$s.out"); rm -f "$MSG/$s.rc" "$MSG/$s.out"
      name=$(name_of "${SLOT_RUN[s]}") SLOT_PID[s]= busy=$((busy - 1)); ((++finished))
      case $rc in 0) ((++RAN)); ((++n_ran)) ;; 3) ((++SKIPPED)) ;; *) ((++FAILED)); ((++n_ran)); FAILURES+=("$name") ;; esac
      if ((PARALLEL)); then
        printf '[%d/%d done, %d failed] %s  %s%s: %s\n' $((RAN + FAILED + SKIPPED)) "$total" "$FAILED" "$(remaining)" \
          "$name" "${SLOT_DEV[s]:+ (device ${SLOT_DEV[s]})}" "$msg"
      else echo "$msg"; fi
    done
  done
  rm -rf "$MSG"
  summary
  ((FAILED == 0))
}

start_slot() {
  local s=$1 i=$2 dev=
  ((${#DEVICES[@]} == 0)) || dev=${DEVICES[s % ${#DEVICES[@]}]}
  (
    trap 'trap "" INT TERM HUP; stop_run; drop_cache; exit 130' INT TERM HUP
    [[ -z $dev ]] || export CUDA_VISIBLE_DEVICES=$dev
    rc=0
    claim_and_run "$i" >"$MSG/$s.out" 2>&1 || rc=$?
    echo "$rc" >"$MSG/$s.rc.tmp" && mv "$MSG/$s.rc.tmp" "$MSG/$s.rc"
  ) &
  SLOT_PID[s]=$! SLOT_RUN[s]=$i SLOT_DEV[s]=$dev
}

# costs_measured: OUT/env_cost.json can be read as bench/env_cost.py reads it (bench/outputs.py's earlier_result): a file
# missing, or one that cannot be read as a JSON object, is measured again, as the sweep does.
costs_measured() {
  "$PYTHON" -c 'import sys; sys.path.insert(0, sys.argv[1]); from bench.outputs import earlier_result
sys.exit(not earlier_result(sys.argv[2]))' "$ROOT" "$OUT/env_cost.json" 2>/dev/null  # bench/env_cost.py warns
}

# run_task: --task, one run of a plan that other processes (SLURM's array, a loop) run the rest of, in the same OUT.
# The first task to find no readable env_cost.json measures it (if the plan times anything); tasks that find it, or
# find another task measuring, go on.
run_task() {
  local i=$((TASK - 1)) fd rc=0
  lock_out -s
  echo "$PRESET" >"$OUT/logs/preset"
  trap on_signal INT TERM HUP
  if ((${#COST_ENVS[@]})) && ! costs_measured; then
    exec {fd}>>"$OUT/logs/env_cost.lock"
    if flock -n "$fd" && ! costs_measured; then measure_env_costs; fi
    exec {fd}>&-
  fi
  echo "benchback task $TASK/${#RUNS[@]}: $(name_of "$i") (preset $PRESET, out $OUT, limit ${TIMEOUT}s, host $(hostname))"
  claim_and_run "$i" || rc=$?
  case $rc in 0) ((++RAN)) ;; 3) ((++SKIPPED)) ;; *) ((++FAILED)); return 1 ;; esac
}

main() {
  local arg
  for arg; do [[ $arg != -h && $arg != --help ]] || { usage; exit 0; }; done
  load_plan "$@"
  ((LIST || SLURM)) || { check_python; check_envs; }  # listing or submitting runs nothing here
  ((LIST || DRY_RUN || GPU_CHECK)) || check_out
  if ((GPU_CHECK)); then "$PYTHON" "$ROOT/bench/gpu_check.py" --variants "$(IFS=,; echo "${CHECK_ROWS[*]}")"; return; fi
  if ((LIST)); then printf '%s' "$LISTING"; return 0; fi
  if ((SLURM)); then "$PYTHON" "$ROOT/bench/slurm.py" "$ROOT/benchmark.sh" "$PYTHON" "$@"; return; fi
  ((DRY_RUN)) || check_same_machine
  if [[ -n $TASK ]]; then run_task; else sweep; fi
}

# On one line: bash reads a script while running it, so this keeps a sweep that runs for hours
# from reading an edit (a git pull) made to this file meanwhile.
main "$@"; exit
