// Package costmodel predicts the run time of a configuration from
// caller-supplied features, to rank candidates before they are measured
// (it satisfies ga.Ranker without importing package ga).
//
// # Ridge
//
// Ridge fits log(seconds) as a linear function of a genome's features:
//
//   - Observe(genome, seconds) appends the row x = features(genome) and
//     y = ln(seconds). It ignores seconds that is not finite and > 0, and
//     rows with a NaN or ±Inf feature. Every row must have the length of
//     the first accepted one; a mismatch panics (a bug in features).
//   - Fit standardizes each column j with the mean μ_j and population
//     standard deviation σ_j of the observed rows, z_j = (x_j − μ_j)/σ_j;
//     a column with σ_j ≤ 1e-12·max(1, |μ_j|) is constant and gets z_j = 0.
//     With Z = [1 | z] (an intercept column of ones) it solves
//     (ZᵀZ + λ·D) w = Zᵀy with D = diag(0, 1, …, 1): the intercept is not
//     penalized (the feature columns are centered, so it is the mean of y).
//     The system is solved by Cholesky (gonum mat), falling back to a
//     general solve if the factorization fails; an ill-conditioned but
//     solved system is accepted. λ > 0 makes the system positive definite,
//     so constant, duplicated or too few columns give finite weights.
//   - Predict returns w_0 + Σ_j w_j·z_j per genome, the predicted
//     ln(seconds): lower is better. It refits first when observations
//     arrived since the last fit. With fewer than 2 observations there is
//     no fit and every prediction is 0 (all equal). A genome with a
//     non-finite feature predicts +Inf.
//
// Parameters: features (nil → the genes themselves as float64) and lambda
// (λ; ≤ 0 or NaN → DefaultLambda = 1e-3; not scaled by the number of
// observations). Fit returns an error only when the solve fails or gives
// non-finite weights; the previous fit (or none) is then kept. A Ridge is
// not safe for concurrent use.
package costmodel
