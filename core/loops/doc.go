// Package loops is neoflow's loop-nest IR and its lowering from a
// specialized op (ir.Spec).
//
// A Func holds one Nest per statement, in program order; each nest is a tree
// of Loops, Blocks, Locals (register arrays) and Stores. Every schedule
// decision is an annotation on a Loop (Parallel with Collapse, Vector,
// Unroll), so a backend only renders what it is given. Expressions are
// ir.Expr trees in which every ir.Index names a loop variable of an
// enclosing Loop (the statement's own variables have been substituted),
// named constants are replaced by literals and index arithmetic is
// simplified. Locals are read and written as ir.Access nodes whose name
// starts with LocalPrefix.
//
// Loop variable names: a statement axis keeps its source name ("k"); the
// two halves of a split axis are "<axis>.o" (outer, the chunk number) and
// "<axis>.l" (the lane within the chunk). '.' never occurs in source names,
// so the names do not collide.
//
// The default schedule (DefaultSchedule) is, per statement:
//
//   - spatial loops outermost in left-hand-side order; loops of extent 1 are
//     removed (their variable is 0);
//   - the innermost spatial axis is split by V = 64 bytes / element size,
//     capped to its extent, into an outer loop and an innermost lane loop
//     (Vector); a remainder of constant width E%V follows in its own Block;
//   - a reduction accumulates into a Local register array acc[V] set to the
//     identity (0, 1, -inf, +inf); the reduction loops run inside the outer
//     split loop and the lane loop is innermost inside them; acc is then
//     stored. '=' statements store directly from the lane loop;
//   - the outermost loop is Parallel, collapsed with the following
//     perfectly nested spatial loops until their iteration count is at
//     least 64.
//
// Statements run in order, each fully materializing its tensor (temporaries
// included) before the next starts; each parallel loop is its own parallel
// region. Dump prints a Func for debugging and golden tests.
package loops
