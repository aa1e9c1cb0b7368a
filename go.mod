module github.com/neoflow/neoflow

go 1.24.0

require (
	github.com/golang/protobuf v1.5.4
	github.com/pkg/errors v0.9.1
	gonum.org/v1/gonum v0.17.0
	google.golang.org/protobuf v1.33.0
	gorgonia.org/cu v0.9.6
)

require github.com/google/uuid v1.1.1 // indirect
