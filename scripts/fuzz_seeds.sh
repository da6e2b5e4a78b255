#!/usr/bin/env bash
# Writes the seed corpora of the JSON fuzz targets from files the CLI writes: graphs
# (`cleave export-graph`), plans of fuzz/plan_graph.json by every algorithm (`cleave plan -o`),
# clusters (`cleave clusters --export`); copies the committed seeds (fuzz/seeds/: TDL statements,
# profile tables). One directory per target under OUT_DIR.
#   bash scripts/fuzz_seeds.sh CLEAVE_BINARY OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
cleave="$1"
out="$2"
mkdir -p "$out"/{tdl_fuzz,graph_json_fuzz,plan_json_fuzz,cluster_json_fuzz,profile_json_fuzz}
cp fuzz/seeds/tdl/* "$out/tdl_fuzz/"
cp fuzz/seeds/profile/* "$out/profile_json_fuzz/"
# Small models (each under the 64 KiB scripts/fuzz.sh gives an input): dense, attention, LSTM cells
# and, forward only, convolutions with batch norm and pools.
mlp=mlp:layers=1,hidden=8,input=8,classes=4,batch=4
for model in "$mlp" gpt:layers=1,hidden=8,heads=2,seq=4,vocab=16,batch=2 \
             rnn:layers=1,hidden=8,steps=2,batch=2,vocab=16; do
  "$cleave" export-graph "$model" -o "$out/graph_json_fuzz/${model%%:*}.json" >/dev/null
done
for model in "$mlp" resnet:depth=18,batch=1,image=32,classes=4; do
  "$cleave" export-graph "$model" --forward-only \
    -o "$out/graph_json_fuzz/${model%%:*}_forward.json" >/dev/null
done
for cluster in k80x8 v100x1 dgx2 cpu:devices=3; do
  "$cleave" clusters --export "$cluster" -o "$out/cluster_json_fuzz/${cluster%%:*}.json" >/dev/null
done
for algo in $("$cleave" plan --help | sed -n 's/^  \([a-z-]*\): .*/\1/p'); do
  "$cleave" plan fuzz/plan_graph.json --cluster k80x8 --algo "$algo" \
    -o "$out/plan_json_fuzz/$algo.json" >/dev/null 2>&1 || true
done
ls "$out/plan_json_fuzz" | grep -q . || { echo "no plan seed written" >&2; exit 1; }
