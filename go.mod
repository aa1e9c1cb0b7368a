module github.com/neoflow/neoflow

go 1.24.0

require (
	google.golang.org/protobuf v1.33.0
	gorgonia.org/cu v0.9.6
)

require (
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/go-cmp v0.6.0 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	gonum.org/v1/gonum v0.17.0 // indirect
)
