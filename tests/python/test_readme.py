"""The Python examples of the README and of the docs pages run, in order
(the README, then the pages in mkdocs.yml's order), as one script (in a child
process with a cache of its own), with small example tensors for the names
the prose introduces (x, w, train_step, model) and tuning budgets cut to a few
trials; the example code itself runs as written. Every public name has a
docstring, which the API reference shows."""

import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]

PRELUDE = """
import functools, torch, neoflow
from neoflow import tuning

# The tuning examples ask for minutes of tuning; a test has seconds.
_tune = neoflow.tune
neoflow.tune = functools.wraps(_tune)(lambda *a, **k: _tune(*a, **{**k, "trials": 2, "seconds": None}))
_session = neoflow.tune_session
neoflow.tune_session = functools.wraps(_session)(lambda *a, **k: _session(*a, **{**k, "trials": 2}))

x, w = torch.randn(2, 3, 9, 9), torch.randn(4, 3, 3, 3)  # the conv examples' inputs
model = torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Tanh(), torch.nn.Linear(6, 2))  # the swap example's
_before = model(torch.ones(3, 6))


def train_step():  # the tuning example's training step: a step of the stride-2 conv
    conv(x.detach().requires_grad_(), w.detach().requires_grad_()).sum().backward()
"""

CHECKS = """
assert c.shape == (2, 16, 7, 7, 4, 4), c.shape
assert x.grad is not None and w.grad is not None
assert [r.kernel for r in report] and os.path.getsize("model.nfb") > 0
assert model.neoflow_swapped == ["0", "2"] and torch.allclose(model(torch.ones(3, 6)), _before, atol=1e-6)
print("README examples ran")
"""


def pages() -> list[pathlib.Path]:
    """README.md, then the docs pages in the order of mkdocs.yml's nav."""
    nav = re.findall(r"^\s+- [^:]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), flags=re.M)
    return [ROOT / "README.md", *(ROOT / "docs" / name for name in nav if name != "index.md")]


def blocks() -> list[str]:
    return [b for p in pages() for b in re.findall(r"^```python\n(.*?)^```", p.read_text(), flags=re.S | re.M)]


def test_readme_has_examples():
    assert len(pages()) >= 10 and all(p.exists() for p in pages())
    assert len(blocks()) >= 8


def test_every_page_is_in_the_nav():
    listed = {p.name for p in pages()[1:]} | {"index.md"}
    assert {p.name for p in (ROOT / "docs").glob("*.md")} == listed


def test_every_public_name_has_a_docstring():
    import neoflow

    missing = [n for n in neoflow.__all__ if not n.startswith("__") and not (getattr(neoflow, n).__doc__ or "").strip()]
    assert not missing, f"public names without a docstring: {missing}"


def test_readme_examples_run(tmp_path):
    script = PRELUDE + "\n".join(blocks()) + "\nimport os\n" + CHECKS
    (tmp_path / "readme.py").write_text(script)
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run(
        [sys.executable, "readme.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "README examples ran" in out.stdout
    assert "d_W" in out.stdout  # explain_grad printed the derived expressions
