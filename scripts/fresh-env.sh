# Sourced after scripts/env.sh: fresh virtual environments for testing the
# built distributions as a user would install them.
#
#   fresh_env 3.12        prints the path of a new environment of Python 3.12
#   run_without_go PY ARGS...
#                         runs PY ARGS from a temporary directory (so no
#                         checkout is on sys.path) with Go off PATH
UV="$NEOFLOW_VENV/bin/uv"

find_python() {
  local v=$1 p
  for p in "${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}"/versions/"$v".*/bin/python"$v"; do
    [ -x "$p" ] && { echo "$p"; return; }
  done
  p=$(command -v "python$v" || true)
  if [ -n "$p" ] && "$p" -c 'pass' 2>/dev/null; then echo "$p"; return; fi
  echo "neoflow: no Python $v found (pyenv install $v, or put python$v on PATH)" >&2
  return 1
}

fresh_env() {
  local python dir
  python=$(find_python "$1")
  dir=$(mktemp -d "${TMPDIR:-/tmp}/neoflow-env-$1-XXXXXX")
  "$UV" venv -q -p "$python" "$dir" >&2
  echo "$dir"
}

run_without_go() {
  local path="" d work
  IFS=: read -ra dirs <<<"$PATH"
  for d in "${dirs[@]}"; do
    [ -x "$d/go" ] || path="${path:+$path:}$d"
  done
  work=$(mktemp -d)
  local rc=0
  (cd "$work" && env -u PYTHONPATH -u NEOFLOW_LIBRARY PATH="$path" "$@") || rc=$?
  rm -rf "$work"
  return $rc
}
