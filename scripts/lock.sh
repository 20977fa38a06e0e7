#!/usr/bin/env bash
# Writes requirements.lock: every package the image installs, at exact versions with the hashes
# of all their PyPI files, resolved by uv for Python 3.11 on Linux (the image's
# python:3.11-slim). Input: pyproject.toml's runtime dependencies (not the dev extra) and its
# build backend ([build-system] requires), which the Dockerfile needs to install the project
# itself without fetching anything unpinned (--no-build-isolation).
#
# Rerun after any change to the dependencies in pyproject.toml (make lock); a test
# (tests/test_deploy_files.py) fails while a runtime dependency is missing from the lock.
# UPGRADE=1 also moves already-locked packages to their newest allowed versions; by default
# uv keeps the versions already in the lock where the constraints still allow them.
# Uses $UV, else uv on PATH, else installs uv into a throw-away venv.
set -euo pipefail
cd "$(dirname "$0")/.."

uv="${UV:-$(command -v uv || true)}"
if [ -z "$uv" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  python3 -m venv "$tmp/venv"
  "$tmp/venv/bin/pip" install -q uv
  uv="$tmp/venv/bin/uv"
fi

upgrade=()
[ "${UPGRADE:-0}" = 1 ] && upgrade=(--upgrade)

# The build backend comes in on stdin ("-"), so the lock names no temporary file.
python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' \
  | "$uv" pip compile pyproject.toml - \
    --python-version 3.11 --python-platform linux \
    --generate-hashes "${upgrade[@]}" \
    --custom-compile-command "scripts/lock.sh" \
    --quiet -o requirements.lock
echo "wrote requirements.lock ($(grep -c '^[a-z]' requirements.lock) packages)"
