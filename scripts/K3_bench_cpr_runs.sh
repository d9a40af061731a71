#!/bin/bash
# usage: cpr_runs.sh TAG  -- small bench cpr runs for the K3 split's pin
set -e
T=$1; L=/work/venv-K3/bin/ldpfleet; P=/work/venv-K3/bin/python
cd /work/wt/K3
COLUMNS=100 $L bench --help > /tmp/K3/$T.bench_help.txt
COLUMNS=100 $L bench cpr --help > /tmp/K3/$T.cpr_help.txt
nice -n 5 $L bench cpr --dataset synthetic --dataset darwin --eps 2 --w 5 --cosine-eps 2 --trials 3 --n 144 --fleet-streams 4 --json > /tmp/K3/$T.cpr.json
nice -n 5 $L bench cpr --dataset synthetic --eps 2 --w 5 --cosine-eps 2 --trials 3 --n 144 --fleet-streams 0 --markdown > /tmp/K3/$T.cpr.md
nice -n 5 $L bench cpr --grid --grid-trials 2 --aperiodic-trials 2 --grid-source darwin --grid-shape 25,12 --grid-eps0 1 --json > /tmp/K3/$T.grid.json
nice -n 5 $L bench cpr --grid --grid-trials 2 --aperiodic-trials 2 --grid-source darwin --grid-shape 25,12 --grid-eps0 1 --markdown > /tmp/K3/$T.grid.md
nice -n 5 $P -m ldpfleet.app.bench_cpr false-claims 5 1 white/150/1.0 ar1/300/5.0 --markdown > /tmp/K3/$T.fc.md
nice -n 5 $P -m ldpfleet.app.bench_cpr held-out 3 1 white --markdown > /tmp/K3/$T.ho.md
$L bench cpr --trials 0 > /tmp/K3/$T.bad1.txt 2>&1 || echo "exit $?" >> /tmp/K3/$T.bad1.txt
$L bench cpr --grid --grid-template /nonexistent.csv > /tmp/K3/$T.bad2.txt 2>&1 || echo "exit $?" >> /tmp/K3/$T.bad2.txt
