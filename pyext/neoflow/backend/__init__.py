"""The ``torch.compile`` backend: ``torch.compile(model, backend="neoflow")``.

Its modules, in the order a graph meets them:

- ``shapes``: a graph with symbolic shapes, lowered once for every shape (its
  sizes read from the inputs at each new shape), with ``sizevalues`` for the
  sizes its statements use as values (counted by the op);
- ``graphs``: the Dynamo backend (``backend``) through AOT Autograd, the
  partition of each graph into subgraphs that run as neoflow ops, and the
  per-graph report (``report``, ``explain=True``);
- ``aten_support``: which ATen operators lower, and why the others do not;
- ``decompose``: which fused operators lower as their parts (decomposed
  inside their subgraph), the others staying whole in eager;
- ``mmsum``: sums of matrix products merged into one product first;
- ``subgraph``: one lowered subgraph, called as its op's kernel (launched in
  C from the graph's code where its shapes are static);
- ``views``: the views left in eager, made from their input's memory;
- ``lowering``: a subgraph's nodes as the statements of one neoflow op, with
  ``convlowering`` for convolutions and pooling, ``indexlowering`` for the
  operators that read or write through index tensors (embedding, gather,
  the embedding's gradient, the negative log-likelihood loss) and
  ``inlining`` for a neoflow op's own node;
- ``layout``: tensors laid out densely other than row-major (channels-last,
  transposed), read and stored by the op in the order they lie in memory;
- ``choice``: a lowered subgraph's kernel or its own eager operators, and
  the compiled graph or Dynamo's graph in eager, whichever was measured
  faster over their first calls.

Everything else of neoflow (ops, autograd, kernels, tuning) is reached through
its package-level functions; the ATen matching stays here, beside FX.
"""

from .graphs import backend, compile, compile_graph, explain_text, report

__all__ = ["backend", "compile", "compile_graph", "explain_text", "report"]
