# shellcheck shell=bash
# The virtual environment with a current PyTorch from PyPI that the PyTorch
# benches share (sourced by bench/bench_vs_pytorch.sh and
# bench/torch_schedule.sh): TORCH_VENV, default ~/.cache/wavepipe/torch-venv,
# made on first use by `pip install ${TORCH_SPEC:-torch}` (PyPI; about 5.4 GiB
# with its CUDA libraries, minutes: bench/README.md), under a temporary name
# and then renamed, so a failed install leaves no half environment.
# Sets venv and py (its python); torch_venv_ready WHO makes the environment
# when torch does not import from it (WHO names the bench in errors) and
# returns non-zero when that fails.
venv=${TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/wavepipe/torch-venv}
py=$venv/bin/python

torch_venv_ready() {
    local who=$1
    "$py" -c 'import torch' 2> /dev/null && return 0
    echo "# making $venv: pip install ${TORCH_SPEC:-torch} (PyPI; about 5.4 GiB with its CUDA libraries)"
    mkdir -p "$(dirname "$venv")" || return 1
    rm -rf "$venv.tmp"
    if ! python3 -m venv "$venv.tmp"; then
        echo "$who: python3 -m venv fails (Debian: apt-get install python3-venv)" >&2
        return 1
    fi
    if ! "$venv.tmp/bin/python" -m pip install --quiet "${TORCH_SPEC:-torch}"; then
        echo "$who: cannot install ${TORCH_SPEC:-torch} into $venv.tmp (PyPI reachable? disk space?)" >&2
        return 1
    fi
    rm -rf "$venv" && mv "$venv.tmp" "$venv" || return 1
    "$py" -c 'import torch' || { echo "$who: torch does not import from $venv" >&2; return 1; }
    echo "# $venv: $(du -sh "$venv" | cut -f1)"
}
