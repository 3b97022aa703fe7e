#!/usr/bin/env bash
# Print the tool versions the project expects.
set -euo pipefail
echo "python: $(python --version 2>&1)"
echo "uv:     $(uv --version 2>/dev/null || echo missing)"
echo "node:   $(node --version 2>/dev/null || echo missing)"
echo "cargo:  $(cargo --version 2>/dev/null || echo missing)"
