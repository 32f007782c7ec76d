#!/usr/bin/env bash
# The architecture test of make check: include cycles, includes up a layer
# and functions over 150 lines in src/ and kernels/ (tests/architecture.py
# says the rules; the layers are written there once).
top=${WP_SRCDIR:-$(cd "$(dirname "$0")/.." && pwd)}
exec python3 "$top/tests/architecture.py" "$top"
