#!/bin/sh
# Helper J: per-device vs gateways on the memory transport, A/B alternating, one process
# per run (peak RSS is per process). Usage: scripts/J_ab.sh PY OUT SIZE... ; one JSON line
# per run into OUT (scripts/C4_scaling.py's line, default steps 20 and retransmit_after 5 s).
PY=$1; OUT=$2; shift 2
for n in "$@"; do
  for run in 1 2; do
    for c in device gateway; do
      nice -n 5 "$PY" scripts/C4_scaling.py "$n" --connection "$c" >> "$OUT"
    done
  done
done
