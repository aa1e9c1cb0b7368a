#!/usr/bin/env bash
# Regenerates the committed protobuf code from neoflow.proto.
# Needs protoc 3.21 (Debian: protobuf-compiler; without root,
# `python -m pip install grpcio-tools==1.51.3` brings one, used when no
# protoc is on PATH: set PYTHON to that Python) and protoc-gen-go v1.33.0:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.33.0
set -euo pipefail
cd "$(dirname "$0")"
if command -v protoc >/dev/null; then
  PROTOC=(protoc)
else
  PROTOC=("${PYTHON:-python3}" -m grpc_tools.protoc -I.)
fi
PATH="$(go env GOPATH)/bin:$PATH"
"${PROTOC[@]}" --go_out=. --go_opt=paths=source_relative neoflow.proto tune.proto
"${PROTOC[@]}" --python_out=../pyext/neoflow/_proto neoflow.proto tune.proto
