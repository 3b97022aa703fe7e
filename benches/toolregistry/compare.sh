#!/usr/bin/env bash
# Runs the same rule set through toolregistry 0.19.0 (the Python seed, installed from PyPI into a
# virtual environment under target/) and through toolgate, in one run, and prints the ratio.
#
#   benches/toolregistry/compare.sh [RULES ...]      (default: 10 100 1000)
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=target/toolregistry-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check toolregistry==0.19.0
fi
cargo build --quiet --release -p toolgate-policy --example mix --example time_evaluate
for rules in "${@:-10 100 1000}"; do
  for n in $rules; do
    dir="$(mktemp -d)"
    target/release/examples/mix "$n" "$dir"
    "$venv/bin/python" benches/toolregistry/compare.py "$n" "$dir" \
      target/release/examples/time_evaluate "$dir/policy.toml" "$dir/calls.jsonl"
    rm -rf "$dir"
    echo
  done
done
