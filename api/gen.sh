#!/usr/bin/env bash
# Regenerates the committed protobuf code from neoflow.proto.
# Needs protoc (Debian: protobuf-compiler) and protoc-gen-go v1.33.0:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.33.0
set -euo pipefail
cd "$(dirname "$0")"
protoc --go_out=. --go_opt=paths=source_relative neoflow.proto tune.proto
protoc --python_out=../pyext/neoflow/_proto neoflow.proto tune.proto
