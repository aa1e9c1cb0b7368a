package ga

// Ranker predicts the cost of unmeasured genomes so that the GA measures
// the most promising children first (Params.Model). It is called from the
// GA's own goroutine only; genomes passed to it are copies it may keep.
type Ranker interface {
	// Predict returns a predicted cost per genome, lower is better. A
	// result of the wrong length is ignored (children keep breeding
	// order); NaN ranks last.
	Predict(genomes [][]int) []float64
	// Observe records a measured genome (seconds > 0) so the model can
	// refit. Failed measurements are not observed.
	Observe(genome []int, seconds float64)
}
