#!/usr/bin/env bash
# benchback sweep: every PPO variant script over environments x model sizes x repeats.
#
#   bash benchmark.sh                                # the original study's GPU sweep (--preset full)
#   bash benchmark.sh --preset cpu                   # the study's answer on 2 CPU cores (--dry-run: its estimated time)
#   bash benchmark.sh --preset quick --out /tmp/q    # a smoke test, under 3 minutes on 2 CPU cores
#   bash benchmark.sh --preset learn                 # every variant learns CartPole-v1 (10 seeds)
#   bash benchmark.sh --preset gpu-check             # first on a GPU: every variant, every check, one table
#   bash benchmark.sh --preset full --variants jax_linen,torch --sizes s --dry-run
#   python plot.py benchmark_out/cpu                 # figures, summary.md and summary.json (ratios with intervals)
#
# Beyond one run at a time (the plan's runs are numbered 1..N; the same command numbers them the same):
#   bash benchmark.sh --preset full --list           # the plan, one "INDEX NAME" line per run
#   bash benchmark.sh --preset full --task 17        # run 17 alone (skipped if done; resumes like a rerun)
#   bash benchmark.sh --preset full --devices 0,1,2,3  # four runs at once, one per GPU (CUDA_VISIBLE_DEVICES)
#   bash benchmark.sh --preset full --slurm --jobs 16  # a SLURM array over the plan, 16 GPUs at once
#
# Each run is its own process writing one JSON record (schema 1) to OUT/EXPERIMENT/NAME.json, where
# NAME = VARIANT__ENV__SIZE[__nNUM_ENVS]__seedSEED. Rerunning the same command resumes: runs whose
# JSON exists and parses are skipped, and the scripts write their JSON atomically, so a killed sweep
# loses only the run in flight. A run that crashes, times out or runs out of memory leaves a failure
# record (status "failed", the command, exit code, stderr tail) in its place and the sweep goes on.
#
# Experiments (numbered as in the original study):
#   overall  (1) async timing, the headline durations and pairwise speedups
#   sync     (2) --sync-timing: rollout (with GAE) and update timed apart
#   compile  (3) compilation on/off. linen vs linen_nojit and torch_compile vs torch are variants of
#                "overall"; nnx's switch is a flag, so this runs nnx with and without cached_partial
#   scaling  (4) --num-envs sweep on CartPole-v1 with the small model: cost vs amount of work
#   learn        CartPole-v1 and Acrobot-v1, each script's default config, over many seeds: does every
#                variant learn, and how many seconds does it take to?
#
# Environment: PYTHON (default python3) is the interpreter the variant scripts run under.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
# Every run compiles from cold, as JAX does by default (its persistent compilation cache is off):
# torch.compile would otherwise reuse kernels cached on disk by earlier runs, and its iteration 0
# would measure the cache, not the compiler.
export TORCH_COMPILE_FORCE_DISABLE_CACHES=1

ALL_VARIANTS=(jax_linen jax_nnx jax_equinox linen_nojit torch torch_compile)
declare -A SCRIPT=([jax_linen]=ppo_jax_linen.py [jax_nnx]=ppo_jax_nnx.py [jax_equinox]=ppo_jax_equinox.py [linen_nojit]=ppo_linen_nojit.py
                   [torch]=ppo_torch.py [torch_compile]=ppo_torch_compile.py)
declare -A HIDDEN=([s]=64,64 [m]=256,256,256 [l]=1024,1024,1024,1024,1024,1024)
STUDY_ENVS=(CartPole-v1 Acrobot-v1 MountainCar-v0 DiscountingChain-bsuite MemoryChain-bsuite
            UmbrellaChain-bsuite BernoulliBandit-misc GaussianBandit-misc Asterix-MinAtar
            Breakout-MinAtar Freeway-MinAtar SpaceInvaders-MinAtar)
ALL_EXPERIMENTS=(overall sync compile scaling learn)

usage() {
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
  cat <<'EOF'

Options:
  --preset NAME        quick | cpu | full | learn | gpu-check (default full)
  --out DIR            output directory (default benchmark_out/PRESET)
  --variants LIST      comma-separated, from: jax_linen,jax_nnx,jax_equinox,linen_nojit,torch,torch_compile
  --envs LIST          gymnax ids for overall, sync, compile and learn (scaling uses CartPole-v1)
  --sizes LIST         from s (64,64), m (256x3), l (1024x6)
  --repeats N          seeds 1..N for every run
  --experiments LIST   from overall,sync,compile,scaling,learn
  --timeout SECONDS    per-run time limit (default: the preset's)
  --retry-failed       rerun runs whose record is a failure record (default: keep it, skip the run)
  --dry-run            print the plan and what is already done; run nothing
  --list               print the plan, one "INDEX NAME" line per run (indices 1..N); run nothing
  --task I             run the plan's run I alone: skipped if its record exists (or another process
                       runs it: each run is claimed with flock on OUT/logs/NAME.lock), else its record
                       or a failure record, the same files as the sweep writes; exit 1 if it fails
  --jobs N             run up to N runs at once, each on a device of its own; a run starts on a device
                       as soon as it is free. Timing runs never share a device: N is at most the number
                       of devices, and without GPUs only the learn experiment may use N > 1
  --devices LIST       GPUs for --jobs (CUDA_VISIBLE_DEVICES values: 0,1,2,3), and --jobs defaults to
                       their number; without --devices, --jobs uses the GPUs CUDA_VISIBLE_DEVICES or
                       nvidia-smi lists
  --slurm              write OUT/slurm/benchback.sbatch from benchmark.sbatch.template (edit that for
                       your account, partition, modules): an array over the plan's indices, one GPU and
                       the per-run limit per task, at most --jobs (default 8) at once, each task running
                       this command with --task; submitted with sbatch if it is on the PATH, else printed
  -h, --help           this help
--variants/--envs/--sizes replace the preset's lists in every experiment that uses them, including
the experiments the preset restricts to fewer variants, envs or sizes to save time.
EOF
}

die() { echo "benchmark.sh: $*" >&2; exit 2; }

# ---------------------------------------------------------------- presets
# Every preset keeps the original study's iteration (32 envs x 256 steps, 8 minibatches, 10 epochs)
# unless it says otherwise, so per-iteration times stay comparable; presets differ in how many
# iterations, environments, sizes and repeats they can afford. RESTRICT["KEY:DIM"] narrows the
# variants, envs or sizes (DIM) of one experiment, one size or one variant (KEY) where the whole grid
# would cost too much: RESTRICT[sync:envs], RESTRICT[m:envs], RESTRICT[linen_nojit:sizes].
# The defaults are the full sweep's; each preset overrides what it changes.
declare -A RESTRICT=()
# MAX_SEEDS[VARIANT] caps that variant's repeats below REPEATS, ITERATIONS_OF[VARIANT] its iterations:
# for a variant too slow to run as often or as long as the others. ITERATIONS_AT[SIZE]: a size's.
declare -A MAX_SEEDS=() ITERATIONS_OF=() ITERATIONS_AT=()
VARIANTS=("${ALL_VARIANTS[@]}") ENVS=("${STUDY_ENVS[@]}") SIZES=(s m l) REPEATS=3
NUM_ENVS=32 NUM_STEPS=256 NUM_MINIBATCHES=8 UPDATE_EPOCHS=10 ITERATIONS=100
EXPERIMENTS=(overall sync compile scaling)
SCALING_NUM_ENVS=(32 64 128 256 512 1024 2048 4096) SCALING_ITERATIONS=20  # throughput needs few iterations
LEARN_ENVS=(CartPole-v1)
TIMEOUT=7200

preset_full() {
  :  # the defaults above: the original study's GPU sweep
}

preset_cpu() {
  # The study's two questions on 2 CPU cores, 3 seeds (blocks) per cell. Environment cost: all 12
  # environments at size s. Model size: s, m and l on CartPole-v1, s and m on Breakout-MinAtar (a
  # dearer env with 100 inputs instead of 4). 21 iterations give a steady time over 20 (the machine's
  # slow spells last seconds to minutes: 10 were too few); an l iteration is long and compute-bound,
  # so l runs 3 (a steady time over 2). Rollout vs update (sync) and NNX with and without
  # cached_partial (compile) on CartPole-v1 and Breakout-MinAtar at s. linen_nojit (eager, about 40 s
  # an iteration) runs in overall only: one seed of 3 iterations at s on CartPole-v1 and Breakout-MinAtar.
  # No scaling: its large num-envs cost more than the rest together here.
  SIZES=(s m l) REPEATS=3 ITERATIONS=21 ITERATIONS_AT[l]=3
  EXPERIMENTS=(overall sync compile)
  RESTRICT[m:envs]="CartPole-v1 Breakout-MinAtar" RESTRICT[l:envs]="CartPole-v1"
  RESTRICT[sync:envs]="CartPole-v1 Breakout-MinAtar" RESTRICT[sync:sizes]="s"
  RESTRICT[compile:envs]="CartPole-v1 Breakout-MinAtar" RESTRICT[compile:sizes]="s"
  MAX_SEEDS[linen_nojit]=1 ITERATIONS_OF[linen_nojit]=3 RESTRICT[linen_nojit:sizes]="s"
  RESTRICT[linen_nojit:envs]="CartPole-v1 Breakout-MinAtar"
  RESTRICT[sync:variants]="jax_linen jax_nnx jax_equinox torch torch_compile"
  SCALING_NUM_ENVS=(32 256 2048) SCALING_ITERATIONS=3  # for --experiments scaling
  TIMEOUT=1200
}

preset_quick() {
  # A smoke test of the sweep and of every figure: a tiny iteration, so process start-up and
  # compilation dominate; the timings mean nothing. Under 3 minutes on 2 cores (2:25 and 2:48 here):
  # sync and scaling run torch only (it starts fastest), and compile adds no run, since its
  # on/off pairs also come from overall's runs.
  ENVS=(CartPole-v1) SIZES=(s) REPEATS=1 EXPERIMENTS=(overall sync scaling)
  NUM_ENVS=8 NUM_STEPS=32 NUM_MINIBATCHES=4 UPDATE_EPOCHS=2 ITERATIONS=3
  RESTRICT[sync:variants]="torch" RESTRICT[scaling:variants]="torch"
  SCALING_NUM_ENVS=(8 32) SCALING_ITERATIONS=2
  TIMEOUT=300
}

preset_learn() {
  # Each script's default config (819200 steps) on CartPole-v1 and Acrobot-v1, seeds 1-10: enough for
  # rliable's interval estimates (plot.py). On 2 CPU cores a run takes about 20 s (JAX) or 50-75 s
  # (torch, torch_compile), but about 37 minutes for linen_nojit, which runs seeds 1-3 on CartPole-v1.
  EXPERIMENTS=(learn) REPEATS=10 TIMEOUT=3600 LEARN_ENVS=(CartPole-v1 Acrobot-v1)
  MAX_SEEDS[linen_nojit]=3 RESTRICT[linen_nojit:envs]="CartPole-v1"
}

preset_gpu_check() {
  # Not a sweep: bench/gpu_check.py runs every variant for 3 short iterations on CartPole-v1 with every
  # check on (device per framework, compilations after iteration 0, host syncs trapped) and prints one
  # table; it fails if any check does. About a minute on 2 CPU cores, where it runs the CPU's checks.
  GPU_CHECK=1
}

# ---------------------------------------------------------------- arguments
PRESET=full OUT= DRY_RUN=0 RETRY_FAILED=0 GPU_CHECK=0
USER_VARIANTS= USER_ENVS= USER_SIZES= USER_REPEATS= USER_EXPERIMENTS= USER_TIMEOUT=
LIST=0 TASK= JOBS= DEVICES_ARG= SLURM=0
FORWARD=()  # the arguments that choose the plan (not --out): what --slurm's tasks are run with

parse_args() {
  while (($#)); do
    case $1 in
      --preset|--out|--variants|--envs|--sizes|--repeats|--experiments|--timeout)
        (($# >= 2)) || die "$1 needs a value"
        case $1 in
          --preset) PRESET=$2 ;; --out) OUT=$2 ;; --variants) USER_VARIANTS=$2 ;; --envs) USER_ENVS=$2 ;;
          --sizes) USER_SIZES=$2 ;; --repeats) USER_REPEATS=$2 ;; --experiments) USER_EXPERIMENTS=$2 ;;
          --timeout) USER_TIMEOUT=$2 ;;
        esac
        [[ $1 == --out ]] || FORWARD+=("$1" "$2")
        shift 2 ;;
      --task|--jobs|--devices)
        (($# >= 2)) && [[ -n $2 && $2 != --* ]] || die "$1 needs a value"
        case $1 in --task) TASK=$2 ;; --jobs) JOBS=$2 ;; --devices) DEVICES_ARG=$2 ;; esac
        shift 2 ;;
      --list) LIST=1; shift ;;
      --slurm) SLURM=1; shift ;;
      --dry-run) DRY_RUN=1; shift ;;
      --retry-failed) RETRY_FAILED=1; FORWARD+=("$1"); shift ;;
      -h|--help) usage; exit 0 ;;
      *) die "unknown argument '$1' (see --help)" ;;
    esac
  done
}

# in_list WORD LIST...: is WORD one of LIST?
in_list() { local w=$1 x; shift; for x; do [[ $x == "$w" ]] && return 0; done; return 1; }

# split_checked NAME TEXT ALLOWED...: the comma-separated TEXT into array NAME, each item one of ALLOWED.
split_checked() {
  local -n into=$1; local text=$2 item; shift 2
  IFS=, read -ra into <<<"$text"
  ((${#into[@]})) || die "empty list"
  for item in "${into[@]}"; do
    (($# == 0)) || in_list "$item" "$@" || die "unknown value '$item'; valid: $*"
  done
}

configure() {
  declare -F "preset_${PRESET//-/_}" >/dev/null || die "unknown preset '$PRESET'; valid: quick cpu full learn gpu-check"
  "preset_${PRESET//-/_}"
  # A list given on the command line replaces the preset's list and its restrictions of that kind.
  if [[ -n $USER_VARIANTS ]]; then split_checked VARIANTS "$USER_VARIANTS" "${ALL_VARIANTS[@]}"; unset_restrictions variants; fi
  if [[ -n $USER_ENVS ]]; then split_checked ENVS "$USER_ENVS"; LEARN_ENVS=("${ENVS[@]}"); unset_restrictions envs; fi
  if [[ -n $USER_SIZES ]]; then split_checked SIZES "$USER_SIZES" "${!HIDDEN[@]}"; unset_restrictions sizes; fi
  if [[ -n $USER_EXPERIMENTS ]]; then split_checked EXPERIMENTS "$USER_EXPERIMENTS" "${ALL_EXPERIMENTS[@]}"; fi
  if [[ -n $USER_REPEATS ]]; then
    [[ $USER_REPEATS =~ ^[1-9][0-9]*$ ]] || die "--repeats must be a positive integer; got '$USER_REPEATS'"
    REPEATS=$USER_REPEATS
  fi
  if [[ -n $USER_TIMEOUT ]]; then
    [[ $USER_TIMEOUT =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a positive integer (seconds); got '$USER_TIMEOUT'"
    TIMEOUT=$USER_TIMEOUT
  fi
  OUT=$(realpath -m "${OUT:-benchmark_out/$PRESET}")  # absolute: the runs get it in --json-out

  local v present=()
  for v in "${VARIANTS[@]}"; do
    if [[ -f $ROOT/${SCRIPT[$v]} ]]; then present+=("$v")
    else echo "skipping variant $v: $ROOT/${SCRIPT[$v]} does not exist yet"; fi
  done
  VARIANTS=("${present[@]}")
}

unset_restrictions() {
  local key
  for key in "${!RESTRICT[@]}"; do [[ $key == *:$1 ]] && unset "RESTRICT[$key]"; done
  return 0
}

# permits KEY DIM ITEM: does the preset allow ITEM (a variant, env or size) for KEY (an experiment, a size or a variant)?
permits() { local only=${RESTRICT[$1:$2]-}; [[ -z $only || " $only " == *" $3 "* ]]; }

# allowed KEY DIM ITEMS...: the ITEMS the preset allows for KEY, one per line.
allowed() {
  local key=$1 dim=$2 x; shift 2
  for x; do permits "$key" "$dim" "$x" && echo "$x"; done
  return 0
}

# ---------------------------------------------------------------- the plan
# One entry per run in parallel arrays; R_FLAGS holds flags without spaces, split when run.
R_NAME=() R_EXP=() R_VARIANT=() R_ENV=() R_SIZE=() R_SEED=() R_FLAGS=() R_ITERATIONS=()

# add_run EXP VARIANT TAG ENV SIZE SEED NUM_ENVS ITERATIONS FLAGS: NUM_ENVS empty = script defaults.
add_run() {
  local exp=$1 variant=$2 tag=$3 env=$4 size=$5 seed=$6 num_envs=$7 iterations=$8 flags=$9
  local name="${exp}/${variant}${tag}__${env}__${size}"
  if [[ -n $num_envs ]]; then
    [[ $exp == scaling ]] && name+=$(printf '__n%04d' "$num_envs")
    flags+=" --num-envs $num_envs --num-steps $NUM_STEPS --num-minibatches $NUM_MINIBATCHES"
    flags+=" --update-epochs $UPDATE_EPOCHS --total-timesteps $((num_envs * NUM_STEPS * iterations))"
  fi
  R_NAME+=("${name}__seed${seed}") R_EXP+=("$exp") R_VARIANT+=("$variant") R_ENV+=("$env")
  R_SIZE+=("$size") R_SEED+=("$seed") R_FLAGS+=("$flags") R_ITERATIONS+=("${iterations:-100}")  # 100: the scripts' default
}

# The variant is the innermost loop of every experiment: the runs a speedup compares follow each
# other, so a shared machine's slow spells (tens of percent here) fall on both sides of a ratio. Each
# repeat (seed) is one such block, and the variants' order rotates from block to block, so that no
# variant always runs first after a pause (or after a run that leaves the machine warm).

# block SEED VARIANT...: the variants of one block, rotated by SEED - 1, one per line.
block() {
  local seed=$1 i n; shift; n=$#
  local variants=("$@")
  for ((i = 0; i < n; i++)); do echo "${variants[(i + seed - 1) % n]}"; done
}

# seeds_of VARIANT: how many seeds that variant runs (REPEATS, or the preset's cap for it).
seeds_of() { echo "${MAX_SEEDS[$1]:-$REPEATS}"; }

# block_runs EXP TAG ENV SIZE SEED NUM_ENVS ITERATIONS FLAGS VARIANT...: one block's runs.
block_runs() {
  local exp=$1 tag=$2 env=$3 size=$4 seed=$5 num_envs=$6 iterations=$7 flags=$8 v; shift 8
  for v in $(block "$seed" "$@"); do
    ((seed <= $(seeds_of "$v"))) && permits "$v" envs "$env" && permits "$v" sizes "$size" || continue
    if [[ $v == jax_nnx+nocache ]]; then  # a setting of jax_nnx, not a script of its own
      add_run "$exp" jax_nnx "$tag+nocache" "$env" "$size" "$seed" "$num_envs" "$iterations" "$flags --no-cached-partial"
    else
      add_run "$exp" "$v" "$tag" "$env" "$size" "$seed" "$num_envs" "${ITERATIONS_OF[$v]:-$iterations}" "$flags"
    fi
  done
}

# grid EXP SEED TAG FLAGS VARIANT...: one seed's blocks of envs x sizes x those variants, as the preset allows.
grid() {
  local exp=$1 seed=$2 tag=$3 flags=$4 env size; shift 4
  for env in $(allowed "$exp" envs "${ENVS[@]}"); do
    for size in $(allowed "$exp" sizes "${SIZES[@]}"); do
      permits "$size" envs "$env" || continue
      block_runs "$exp" "$tag" "$env" "$size" "$seed" "$NUM_ENVS" "${ITERATIONS_AT[$size]:-$ITERATIONS}" "$flags" \
        $(allowed "$exp" variants "$@")
    done
  done
}

# The seed is the outermost loop: the plan is REPEATS rounds, each a block of every cell of every
# experiment, so a sweep stopped part way has every cell with fewer seeds rather than some cells with all.
make_plan() {
  local exp n seed env
  for ((seed = 1; seed <= REPEATS; seed++)); do
    for exp in "${EXPERIMENTS[@]}"; do
      case $exp in
        overall) grid overall "$seed" "" "" "${VARIANTS[@]}" ;;
        sync) grid sync "$seed" "" --sync-timing "${VARIANTS[@]}" ;;
        compile)  # only nnx has cached_partial to switch off: both settings, block by block
          if in_list jax_nnx "${VARIANTS[@]}"; then grid compile "$seed" "" "" jax_nnx jax_nnx+nocache; fi ;;
        scaling)
          for n in "${SCALING_NUM_ENVS[@]}"; do
            block_runs scaling "" CartPole-v1 s "$seed" "$n" "$SCALING_ITERATIONS" "" $(allowed scaling variants "${VARIANTS[@]}")
          done ;;
        learn)
          for env in "${LEARN_ENVS[@]}"; do
            block_runs learn "" "$env" s "$seed" "" "" "" $(allowed learn variants "${VARIANTS[@]}")
          done ;;
      esac
    done
  done
}

# ---------------------------------------------------------------- running
# record_status FILE: ok | failed | corrupt | missing. Only "ok" and (without --retry-failed)
# "failed" count as done; a corrupt file is run again and replaced.
record_status() {
  [[ -e $1 ]] || { echo missing; return; }
  "$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("status", "corrupt"))' "$1" \
    2>/dev/null || echo corrupt
}

is_done() {
  [[ $1 == ok || ($1 == failed && $RETRY_FAILED == 0) ]]
}

now_s() { local t=${EPOCHREALTIME//[!0-9]/}; echo $((t / 1000000)); }  # locale-proof: digits only
hms() { printf '%d:%02d:%02d' $(($1 / 3600)) $(($1 % 3600 / 60)) $(($1 % 60)); }

# write_failure FILE REASON EXIT_CODE DURATION STDERR_FILE INDEX COMMAND...: the failure record.
write_failure() {
  local file=$1 reason=$2 code=$3 duration=$4 stderr_file=$5 i=$6; shift 6
  "$PYTHON" - "$file" "$reason" "$code" "$duration" "$TIMEOUT" "$stderr_file" "${R_EXP[i]}" "${R_VARIANT[i]}" \
    "${R_ENV[i]}" "${HIDDEN[${R_SIZE[i]}]}" "${R_SEED[i]}" "$@" <<'EOF'
import json, os, sys, tempfile, time
path, reason, code, duration, limit, stderr_file, experiment, variant, env_id, hidden, seed, *command = sys.argv[1:]
try:
    with open(stderr_file, errors="replace") as f:
        tail = f.read()[-4000:]
except OSError:
    tail = ""
record = {
    "schema_version": 1, "status": "failed", "reason": reason, "exit_code": int(code),
    "experiment": experiment, "variant": variant, "env_id": env_id,
    "hidden": [int(h) for h in hidden.split(",")], "seed": int(seed),
    "duration": int(duration), "timeout_s": int(limit), "command": command, "stderr_tail": tail,
    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
}
fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".json")
with os.fdopen(fd, "w") as f:
    json.dump(record, f, indent=1)
os.replace(tmp, path)
EOF
}

# stop_run: stop the run in flight, if any. Every background job of this shell, not a stored pid:
# a signal can arrive between starting the run and storing its pid.
stop_run() {
  local pids
  pids=$(jobs -p)
  [[ -z $pids ]] && return 0
  # shellcheck disable=SC2086  # one pid per word
  kill -TERM $pids 2>/dev/null || true
  wait 2>/dev/null || true
}

# run_one INDEX: run it under the time limit; print the outcome; on failure write the record.
run_one() {
  local i=$1 file="$OUT/${R_NAME[$1]}.json" log="$OUT/logs/${R_NAME[$1]}"
  local variant=${R_VARIANT[i]}
  # shellcheck disable=SC2206  # R_FLAGS holds space-free flags; splitting them is intended
  local cmd=("$PYTHON" "$ROOT/${SCRIPT[$variant]}" --env-id "${R_ENV[i]}" --hidden "${HIDDEN[${R_SIZE[i]}]}"
             --seed "${R_SEED[i]}" --exp-name "${R_EXP[i]}" --json-out "$file" --no-tensorboard --quiet ${R_FLAGS[i]})
  mkdir -p "$(dirname "$file")" "$(dirname "$log")"
  local start rc=0 duration reason
  start=$(now_s)
  # In the background so that a signal to this script is handled at once (see on_signal), not
  # after the run. --foreground keeps the run in our process group, so killing the group (a
  # crash, a CI job cancelled) kills the run too rather than leaving it behind; the run is
  # killed 30 s after its limit if it ignores the TERM.
  timeout --foreground --kill-after=30 "$TIMEOUT" "${cmd[@]}" >"$log.stdout" 2>"$log.stderr" &
  wait $! || rc=$?
  duration=$(($(now_s) - start))
  if ((rc == 0)) && [[ $(record_status "$file") == ok ]]; then
    echo "ok in ${duration}s"; return 0
  fi
  if ((rc == 0)); then reason="no-result"  # exited cleanly without a valid JSON record
  elif ((rc == 124 || duration >= TIMEOUT)); then reason="timeout"
  elif ((rc == 2)); then reason="usage"
  elif ((rc == 137)) || grep -qiE 'out of memory|RESOURCE_EXHAUSTED|MemoryError|OutOfMemory' "$log.stderr"; then
    reason="oom"  # 137 = SIGKILL, which is what the kernel's OOM killer sends
  else reason="crash"; fi
  write_failure "$file" "$reason" "$rc" "$duration" "$log.stderr" "$i" "${cmd[@]}" || echo -n "(failure record not written) "
  echo "FAILED ($reason, exit code $rc) in ${duration}s: see $log.stderr"
  return 1
}

RAN=0 SKIPPED=0 FAILED=0 OLD_FAILED=0 FAILURES=()

summary() {
  echo "summary: ran $RAN, skipped $SKIPPED (already done), failed $FAILED; results in $OUT"
  ((OLD_FAILED == 0)) || echo "  $OLD_FAILED of the skipped are failure records from before; --retry-failed reruns them"
  local f; for f in "${FAILURES[@]}"; do echo "  failed: $f"; done
  return 0
}

on_signal() {
  trap - INT TERM
  stop_run
  echo
  echo "interrupted: the run in flight was stopped and wrote nothing; rerun the same command to resume"
  summary
  exit 130
}

measure_env_costs() {
  # The env-complexity x-axis of plot.py, at the training --num-envs of the timing experiments.
  local exp envs=()
  for exp in overall sync compile; do
    in_list "$exp" "${EXPERIMENTS[@]}" || continue
    mapfile -t -O "${#envs[@]}" envs < <(allowed "$exp" envs "${ENVS[@]}")
  done
  ((${#envs[@]})) || return 0
  mapfile -t envs < <(printf '%s\n' "${envs[@]}" | sort -u)
  local rc=0
  "$PYTHON" "$ROOT/env_cost.py" --out "$OUT/env_cost.json" --num-envs "$NUM_ENVS" "${envs[@]}" || rc=$?
  ((rc != 2)) || die "bad --envs (see the error above); nothing was run"
  ((rc == 0)) || echo "warning: env_cost.py failed (exit code $rc); plot.py will order environments by name"
}

# check_python: PYTHON runs and has what the chosen variants import, or one line and exit 2.
check_python() {
  local modules=(gymnax jax tyro tensorboard) v missing
  for v in "${VARIANTS[@]}"; do
    if [[ $v == torch* ]]; then modules+=(torch); elif [[ $v == jax_equinox ]]; then modules+=(equinox optax); else modules+=(flax optax); fi
  done
  "$PYTHON" -c '' 2>/dev/null || die "cannot run PYTHON=$PYTHON (set PYTHON to the project's interpreter)"
  missing=$("$PYTHON" -c 'import importlib.util, sys; print(*sorted({m for m in sys.argv[1:] if not importlib.util.find_spec(m)}))' \
    "${modules[@]}") || die "PYTHON=$PYTHON failed to look up its packages"
  [[ -z $missing ]] || die "PYTHON=$PYTHON cannot import: $missing (activate the project's virtual environment, or set PYTHON to its interpreter)"
}

# check_envs: the --envs ids are gymnax environments with discrete actions, or one line and exit 2, before the plan
# (every run of another id would fail). The preset's own environments are known to be.
check_envs() {
  [[ -n $USER_ENVS ]] || return 0
  local bad
  bad=$("$PYTHON" - "${ENVS[@]}" <<'EOF'
import sys
import gymnax
from gymnax.environments.spaces import Discrete
known = [e for e in gymnax.registered_envs if e != "MNISTBandit-bsuite"]  # that one downloads MNIST when built
for env_id in sys.argv[1:]:
    if env_id not in known:
        print(f"unknown environment '{env_id}'; gymnax ids: {', '.join(known)}")
        break
    env, params = gymnax.make(env_id)
    if not isinstance(env.action_space(params), Discrete):
        print(f"{env_id} has continuous actions; the variants train discrete-action environments only")
        break
EOF
) || die "PYTHON=$PYTHON failed to check --envs"
  [[ -z $bad ]] || die "--envs: $bad"
}

# check_out: OUT exists and is writable, or can be made where the nearest existing directory is writable;
# else one line and exit 2, before anything runs. Nothing is created by the check.
check_out() {
  local dir=$OUT
  while [[ ! -d $dir ]]; do
    [[ ! -e $dir ]] || die "--out $OUT cannot be created: $dir is a file"
    dir=$(dirname "$dir")
  done
  { : >"$dir/.tmp-check-$$" && rm -f "$dir/.tmp-check-$$"; } 2>/dev/null || die "--out $OUT cannot be written: $dir does not accept files"
}

# check_same_cpu: refuse (one line, exit 2, nothing run) to add runs to an OUT whose CPU timings came from
# another CPU model: a sweep resumed there would pair, in one block, runs timed on two machines.
check_same_cpu() {
  [[ -d $OUT ]] || return 0
  local found
  found=$("$PYTHON" - "$OUT" <<'EOF'
import json, pathlib, platform, sys
# The model as the scripts' cpu_info() names it (tests/test_benchmark.py holds the two to the same string).
first = open("/proc/cpuinfo").read().split("\n\n")[0] if pathlib.Path("/proc/cpuinfo").exists() else ""
fields = {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in first.splitlines() if ":" in line)}
here = fields.get("model name") or platform.processor() or platform.machine()
if "cpu family" in fields:
    here += f" (family {fields['cpu family']}, model {fields.get('model')})"
for path in pathlib.Path(sys.argv[1]).rglob("*.json"):
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        continue
    model = (record.get("cpu") or {}).get("model") if isinstance(record, dict) and record.get("device") == "cpu" else None
    if model not in (None, here):
        print(f"{path.name} was timed on {model}, and this machine is {here}")
        break
EOF
) || return 0
  [[ -z $found ]] || die "$OUT holds CPU timings of another CPU model ($found): give another --out"
}

# ---------------------------------------------------------------- beyond one run at a time
# --task, --jobs and --slurm run the plan's runs by index (R_NAME's order + 1, as --list and --dry-run
# number them). A run is claimed with flock on OUT/logs/NAME.lock before it starts; the run inherits
# the lock, so it is held until the run's process ends, even if the shell that started it was killed,
# and the kernel drops it with the process: a killed run never leaves a stale claim. Two processes
# given the same run thus never run it at once, and the second finds the first's record and skips.
DEVICES=() SWEEP_START=0

# check_modes: --list, --task, --jobs/--devices, --slurm and --dry-run, each valid and alone, or exit 2.
check_modes() {
  local n=$((LIST + DRY_RUN + SLURM)) d
  [[ -z $TASK ]] || ((++n))
  ((n <= 1)) || die "--list, --task, --slurm and --dry-run do not combine; give one"
  if [[ -n $JOBS ]]; then
    [[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs must be a positive integer; got '$JOBS'"
  fi
  if [[ -n $JOBS$DEVICES_ARG ]] && ((LIST || DRY_RUN)) || [[ -n $TASK && -n $JOBS$DEVICES_ARG ]]; then
    die "--jobs and --devices do not combine with --list, --task or --dry-run"
  fi
  ((SLURM == 0)) || [[ -z $DEVICES_ARG ]] || die "--devices does not combine with --slurm (SLURM gives each task its GPU)"
  if ((GPU_CHECK)) && { ((LIST || SLURM)) || [[ -n $TASK$JOBS$DEVICES_ARG ]]; }; then
    die "the gpu-check preset is a check, not a sweep: it has no runs to list, split or submit"
  fi
  if [[ -n $DEVICES_ARG ]]; then
    IFS=, read -ra DEVICES <<<"$DEVICES_ARG"
    ((${#DEVICES[@]})) || die "--devices: empty list"
    for d in "${DEVICES[@]}"; do
      [[ $d =~ ^([0-9]+|(GPU|MIG)-[0-9A-Za-z/-]+)$ ]] || die "--devices: '$d' is not a GPU index (0,1,...) or UUID"
    done
    (($(printf '%s\n' "${DEVICES[@]}" | sort -u | wc -l) == ${#DEVICES[@]})) || die "--devices: '$DEVICES_ARG' names a device twice"
    JOBS=${JOBS:-${#DEVICES[@]}}
  elif [[ -n $JOBS ]] && ((SLURM == 0)); then  # the GPUs this process may use, if any
    if [[ -n ${CUDA_VISIBLE_DEVICES-} ]]; then IFS=, read -ra DEVICES <<<"$CUDA_VISIBLE_DEVICES"
    elif command -v nvidia-smi >/dev/null; then
      mapfile -t DEVICES < <(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | tr -d ' ' || true)
    fi
  fi
  return 0
}

# check_jobs: after the plan, refuse --jobs that would time runs side by side on one device.
check_jobs() {
  local i timing=0
  for i in "${!R_EXP[@]}"; do [[ ${R_EXP[i]} == learn ]] || { timing=1; break; }; done
  ((timing && JOBS > 1)) || return 0
  ((${#DEVICES[@]})) || die "--jobs $JOBS refused: no GPUs (no --devices, no nvidia-smi), and timing runs side by side on the CPU would slow each other; only --experiments learn may run several at once here"
  ((JOBS <= ${#DEVICES[@]})) || die "--jobs $JOBS refused: only ${#DEVICES[@]} devices ($(IFS=,; echo "${DEVICES[*]}")), and timing runs never share a device"
}

# estimate INDEX...: those runs' estimated duration, from the costs measured before (bench/run_costs.py).
estimate() {
  local i name
  for i; do
    name=${R_NAME[i]#*/}
    echo "${name%%__*} ${R_ENV[i]} ${R_SIZE[i]} ${R_ITERATIONS[i]}"
  done | "$PYTHON" "$ROOT/bench/run_costs.py" estimate --at-once "${JOBS:-1}" 2>/dev/null || echo "no estimate (bench/run_costs.py failed)"
}

# list_plan: the plan, one "INDEX NAME" line per run.
list_plan() {
  local i
  for i in "${!R_NAME[@]}"; do printf '%d %s\n' $((i + 1)) "${R_NAME[i]}"; done
}

# claim_and_run INDEX: run it unless it is done or another process holds its claim. Returns 0 (ran,
# ok), 1 (ran, failed) or 3 (skipped). A failure record from before this process started is done unless
# --retry-failed; one written since (by a process that claimed the run first) is done either way.
claim_and_run() {
  local i=$1 file="$OUT/${R_NAME[$1]}.json" lock="$OUT/logs/${R_NAME[$1]}.lock" fd status rc=0
  mkdir -p "$(dirname "$lock")"
  exec {fd}>>"$lock"
  if ! flock -n "$fd"; then
    exec {fd}>&-; echo "skipped: another process is running it (it holds $lock)"; return 3
  fi
  status=$(record_status "$file")
  if [[ $status == ok || $status == failed ]] && { is_done "$status" || (($(stat -c %Y "$file") >= SWEEP_START)); }; then
    exec {fd}>&-; echo "skipped: already done ($status)"; return 3
  fi
  run_one "$i" || rc=$?
  exec {fd}>&-
  return "$rc"
}

# measure_env_costs_once: for --task, whose runs share OUT: the first task to find no env_cost.json
# measures it (if the plan times anything); tasks that find it, or find another task measuring, go on.
measure_env_costs_once() {
  local fd exp timed=0
  for exp in overall sync compile; do in_list "$exp" "${EXPERIMENTS[@]}" && timed=1; done
  ((timed)) && [[ ! -e $OUT/env_cost.json ]] || return 0
  mkdir -p "$OUT/logs"
  exec {fd}>>"$OUT/logs/env_cost.lock"
  if flock -n "$fd" && [[ ! -e $OUT/env_cost.json ]]; then measure_env_costs; fi
  exec {fd}>&-
}

run_task() {
  local total=${#R_NAME[@]} rc=0
  [[ $TASK =~ ^[1-9][0-9]*$ ]] && ((TASK <= total)) || die "--task must be one of the plan's indices, 1..$total (see --list); got '$TASK'"
  local i=$((TASK - 1))
  SWEEP_START=$(now_s)
  mkdir -p "$OUT"
  trap on_signal INT TERM
  measure_env_costs_once
  echo "benchback task $TASK/$total: ${R_NAME[i]} (preset $PRESET, out $OUT, limit ${TIMEOUT}s, host $(hostname))"
  claim_and_run "$i" || rc=$?
  case $rc in 0) ((++RAN)) ;; 3) ((++SKIPPED)) ;; *) ((++FAILED)); return 1 ;; esac
}

# run_jobs: the plan's runs still to do, JOBS at a time, slot s on device DEVICES[s % number of devices];
# each run is a subshell that writes its outcome to MSG/s.out and its exit code to MSG/s.rc.
SLOT_PID=() SLOT_RUN=() SLOT_DEV=() MSG=
run_jobs() {
  local total=${#R_NAME[@]} i s status todo=() rc msg where
  SWEEP_START=$(now_s)
  for i in "${!R_NAME[@]}"; do
    status=$(record_status "$OUT/${R_NAME[i]}.json")
    if is_done "$status"; then ((++SKIPPED)); [[ $status == failed ]] && ((++OLD_FAILED)); else todo+=("$i"); fi
  done
  where="on the CPU"; ((${#DEVICES[@]} == 0)) || where="on devices $(IFS=,; echo "${DEVICES[*]}")"
  echo "benchback sweep: preset $PRESET, $total runs ($SKIPPED already done), out $OUT, per-run limit ${TIMEOUT}s, $JOBS at a time $where"
  echo "  $(estimate "${todo[@]}")"
  mkdir -p "$OUT"
  # Only stale temporary files: other processes (--task, another sweep) may be writing theirs now.
  find "$OUT" -name '.tmp-*.json' -mmin +10 -delete
  MSG=$(mktemp -d)
  trap on_jobs_signal INT TERM
  measure_env_costs

  local next=0 busy=0 finished=0 n_ran=0 t0 elapsed eta
  t0=$(now_s)
  while ((next < ${#todo[@]} || busy > 0)); do
    for ((s = 0; s < JOBS && next < ${#todo[@]}; s++)); do
      [[ -z ${SLOT_PID[s]-} ]] || continue
      start_slot "$s" "${todo[next]}"; ((++next)); ((++busy))
    done
    wait -n 2>/dev/null || true
    for ((s = 0; s < JOBS; s++)); do
      [[ -n ${SLOT_PID[s]-} ]] || continue
      if [[ -e $MSG/$s.rc ]]; then rc=$(<"$MSG/$s.rc")
      elif kill -0 "${SLOT_PID[s]}" 2>/dev/null; then continue
      else rc=1; echo "FAILED: its worker died" >>"$MSG/$s.out"; fi
      wait "${SLOT_PID[s]}" 2>/dev/null || true
      msg=$(tail -n 1 "$MSG/$s.out"); rm -f "$MSG/$s.rc" "$MSG/$s.out"
      i=${SLOT_RUN[s]} SLOT_PID[s]= busy=$((busy - 1)); ((++finished))
      case $rc in 0) ((++RAN)); ((++n_ran)) ;; 3) ((++SKIPPED)) ;; *) ((++FAILED)); ((++n_ran)); FAILURES+=("${R_NAME[i]}") ;; esac
      elapsed=$(($(now_s) - t0))
      # Remaining time: runs still to do times the mean interval between finished runs (parallel ones overlap).
      if ((n_ran)); then eta=$(hms $((elapsed * (${#todo[@]} - finished) / n_ran))); else eta="?"; fi
      printf '[%d/%d done, %d failed] elapsed %s, remaining ~%s  %s%s: %s\n' $((RAN + FAILED + SKIPPED)) "$total" \
        "$FAILED" "$(hms "$elapsed")" "$eta" "${R_NAME[i]}" "${SLOT_DEV[s]:+ (device ${SLOT_DEV[s]})}" "$msg"
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
    trap 'stop_run; exit 130' INT TERM
    [[ -z $dev ]] || export CUDA_VISIBLE_DEVICES=$dev
    rc=0
    claim_and_run "$i" >"$MSG/$s.out" 2>&1 || rc=$?
    echo "$rc" >"$MSG/$s.rc.tmp" && mv "$MSG/$s.rc.tmp" "$MSG/$s.rc"
  ) &
  SLOT_PID[s]=$! SLOT_RUN[s]=$i SLOT_DEV[s]=$dev
}

on_jobs_signal() {
  trap - INT TERM
  local pid
  for pid in "${SLOT_PID[@]}"; do [[ -z $pid ]] || kill -TERM "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$MSG"
  echo
  echo "interrupted: the runs in flight were stopped and wrote nothing; rerun the same command to resume"
  summary
  exit 130
}

# SLURM's default MaxArraySize (1001) allows indices up to 1000: a longer plan goes in several arrays,
# each after the one before it (so the limit on runs at once holds), with an offset added to the index.
MAX_ARRAY=1000

# write_slurm: OUT/slurm/benchback.sbatch from the template, then sbatch it (or say how).
write_slurm() {
  local total=${#R_NAME[@]} limit=${JOBS:-8} dir=$OUT/slurm template=$ROOT/benchmark.sbatch.template
  local script=$OUT/slurm/benchback.sbatch text args time
  ((total)) || die "the plan has no runs; nothing to submit"
  [[ -r $template ]] || die "cannot read the SLURM template $template"
  args=$(printf '%q ' "${FORWARD[@]}" --out "$OUT")
  time=$(hms $((TIMEOUT + 30 + 300)))  # the run's limit, timeout's 30 s grace, 5 minutes to start and record
  text=$(<"$template")
  shopt -u patsub_replacement 2>/dev/null || true  # bash 5.2: "&" in a replacement is literal
  text=${text//@ARRAY@/1-$((total < MAX_ARRAY ? total : MAX_ARRAY))%$limit}
  text=${text//@TIME@/$time} text=${text//@LOGS@/$dir/logs} text=${text//@PYTHON@/$(printf '%q' "$PYTHON")}
  text=${text//@BENCHMARK@/$(printf '%q' "$ROOT/benchmark.sh")} text=${text//@ARGS@/${args% }}
  text=${text//@RUNS@/$total} text=${text//@PRESET@/$PRESET}
  mkdir -p "$dir/logs"
  printf '%s\n' "$text" >"$script"
  echo "wrote $script: $total runs as a SLURM array, at most $limit at once, each on one GPU for at most $time"

  local offset n command commands=() jid=
  if ((total <= MAX_ARRAY)); then commands=("sbatch $(printf '%q' "$script")")
  else
    for ((offset = 0; offset < total; offset += MAX_ARRAY)); do
      n=$((total - offset < MAX_ARRAY ? total - offset : MAX_ARRAY))
      command="sbatch --parsable"
      ((offset == 0)) || command+=" --dependency=afterany:\$jid"
      commands+=("$command --array=1-$n%$limit --export=ALL,BENCHBACK_TASK_OFFSET=$offset $(printf '%q' "$script")")
    done
  fi
  if ! command -v sbatch >/dev/null; then
    echo "sbatch is not on the PATH: on the cluster's login node, in this directory, run:"
    if ((${#commands[@]} == 1)); then echo "  ${commands[0]}"
    else printf '  jid=$(%s); jid=${jid%%%%;*}\n' "${commands[@]}"; fi
    return 0
  fi
  local out
  for command in "${commands[@]}"; do
    command=${command//\$jid/$jid}
    echo "$command"
    out=$(eval "$command") || die "sbatch failed: $out"
    echo "$out"
    jid=${out%%;*}
  done
}

main() {
  parse_args "$@"
  configure
  check_modes
  ((LIST || SLURM)) || { check_python; check_envs; }  # listing or submitting runs nothing here
  ((LIST || DRY_RUN || GPU_CHECK)) || check_out
  if ((GPU_CHECK)); then
    local variants; variants=$(IFS=,; echo "${VARIANTS[*]}")
    "$PYTHON" "$ROOT/bench/gpu_check.py" --variants "$variants"; return
  fi
  make_plan
  if ((LIST)); then list_plan; return 0; fi
  if ((SLURM)); then write_slurm; return 0; fi
  ((DRY_RUN)) || check_same_cpu
  if [[ -n $TASK ]]; then run_task; return; fi
  if [[ -n $JOBS ]] && ((JOBS > 1 || ${#DEVICES[@]})); then check_jobs; run_jobs; return; fi
  local total=${#R_NAME[@]} i status k todo=() done_count=0
  local statuses=()
  for i in "${!R_NAME[@]}"; do
    status=$(record_status "$OUT/${R_NAME[i]}.json")
    statuses+=("$status")
    if is_done "$status"; then ((++done_count)); else todo+=("$i"); fi
  done
  echo "benchback sweep: preset $PRESET, $total runs ($done_count already done), out $OUT, per-run limit ${TIMEOUT}s"
  echo "  $(estimate "${todo[@]}")"

  if ((DRY_RUN)); then
    local exp
    for exp in "${ALL_EXPERIMENTS[@]}"; do
      k=0; for i in "${!R_NAME[@]}"; do [[ ${R_EXP[i]} == "$exp" ]] && ((++k)); done
      ((k == 0)) || echo "  $exp: $k runs"
    done
    for i in "${!R_NAME[@]}"; do
      status=to-run
      if is_done "${statuses[i]}"; then status=${statuses[i]/ok/done}; fi
      printf '[%d/%d] %-6s %s  %s\n' $((i + 1)) "$total" "$status" "${R_NAME[i]}" "${R_FLAGS[i]# }"
    done
    echo "plan: $total runs, $done_count already done, ${#todo[@]} to run"
    return 0
  fi

  # The scripts' atomic writes leave .tmp-* files only if killed mid-write; they are never results.
  mkdir -p "$OUT"
  find "$OUT" -name '.tmp-*.json' -delete
  trap on_signal INT TERM
  measure_env_costs

  local t0 elapsed eta n_ran=0
  t0=$(now_s)
  for i in "${!R_NAME[@]}"; do
    status=${statuses[i]}
    if is_done "$status"; then
      ((++SKIPPED)); [[ $status == failed ]] && ((++OLD_FAILED)); continue
    fi
    elapsed=$(($(now_s) - t0))
    # Remaining time: mean duration of the runs so far times the runs still to do.
    if ((n_ran)); then eta=$(hms $((elapsed * (${#todo[@]} - n_ran) / n_ran))); else eta="?"; fi
    printf '[%d/%d] elapsed %s, remaining ~%s  %s ... ' $((i + 1)) "$total" "$(hms "$elapsed")" "$eta" "${R_NAME[i]}"
    if run_one "$i"; then ((++RAN)); else ((++FAILED)); FAILURES+=("${R_NAME[i]}"); fi
    ((++n_ran))
  done
  summary
  ((FAILED == 0))
}

# On one line: bash reads a script while running it, so this keeps a sweep that runs for hours
# from reading an edit (a git pull) made to this file meanwhile.
main "$@"; exit
