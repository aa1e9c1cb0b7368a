#!/usr/bin/env bash
# Prints a directory with include/cuda.h and lib/libcuda.so (the driver
# API's link stub): what the CUDA build of neoflow's library compiles and
# links against. No GPU, driver or CUDA toolkit is needed to build it.
#
# Looks in CUDA_HOME (and /usr/local/cuda); otherwise unpacks those two
# files from Debian's nvidia-cuda-dev package (in the contrib and non-free
# components, which it adds to apt's sources when missing) into
# $NEOFLOW_CUDA_DEV (default ~/.cache/neoflow/cuda-dev), without
# installing the package's 2.8 GB of dependencies. Needs root for apt on
# the first run only.
set -euo pipefail
out=${NEOFLOW_CUDA_DEV:-$HOME/.cache/neoflow/cuda-dev}

for home in "${CUDA_HOME:-}" /usr/local/cuda; do
  [ -n "$home" ] || continue
  for lib in "$home/lib64/stubs" "$home/lib64" "$home/targets/x86_64-linux/lib/stubs"; do
    if [ -f "$home/include/cuda.h" ] && [ -f "$lib/libcuda.so" ]; then
      mkdir -p "$out/include" "$out/lib"
      ln -sf "$home/include/cuda.h" "$out/include/cuda.h"
      ln -sf "$lib/libcuda.so" "$out/lib/libcuda.so"
      echo "$out"
      exit 0
    fi
  done
done

if [ -f "$out/include/cuda.h" ] && [ -f "$out/lib/libcuda.so" ]; then
  echo "$out"
  exit 0
fi

command -v apt-get >/dev/null || { echo "neoflow: no CUDA headers: set CUDA_HOME to a CUDA toolkit" >&2; exit 1; }
if [ -z "$(apt-cache madison nvidia-cuda-dev 2>/dev/null)" ]; then
  [ "$(id -u)" = 0 ] || { echo "neoflow: nvidia-cuda-dev is not in apt's sources; as root, add Debian's contrib and non-free components, or set CUDA_HOME" >&2; exit 1; }
  . /etc/os-release
  cat > /etc/apt/sources.list.d/neoflow-cuda.sources <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${VERSION_CODENAME} ${VERSION_CODENAME}-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  echo "neoflow: added Debian contrib non-free to apt's sources (/etc/apt/sources.list.d/neoflow-cuda.sources)" >&2
  apt-get update -qq >&2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "neoflow: fetching cuda.h and the libcuda stub from Debian's nvidia-cuda-dev" >&2
(cd "$tmp" && apt-get download -qq nvidia-cuda-dev >&2 2>/dev/null || apt-get download nvidia-cuda-dev >&2)
deb=$(ls "$tmp"/nvidia-cuda-dev_*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./usr/include/cuda.h ./usr/lib/x86_64-linux-gnu/stubs/libcuda.so
mkdir -p "$out/include" "$out/lib"
cp "$tmp/usr/include/cuda.h" "$out/include/cuda.h"
cp "$tmp/usr/lib/x86_64-linux-gnu/stubs/libcuda.so" "$out/lib/libcuda.so"
echo "$out"
