package costmodel_test

import (
	"github.com/neoflow/neoflow/autotune/costmodel"
	"github.com/neoflow/neoflow/autotune/ga"
)

var _ ga.Ranker = (*costmodel.Ridge)(nil)
