"""Progress bars: tqdm on stderr when it is a terminal, NEOFLOW_PROGRESS overriding."""

import io

import pytest
from neoflow import progress


class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    "env, tty, asked, want",
    [
        (None, True, True, True),
        (None, False, True, False),  # a log file or a pipe: no bar
        (None, True, False, False),  # progress=False wins
        ("0", True, True, False),
        ("off", True, True, False),
        ("1", False, True, True),
        ("1", False, False, False),
    ],
)
def test_enabled(monkeypatch, env, tty, asked, want):
    if env is None:
        monkeypatch.delenv("NEOFLOW_PROGRESS", raising=False)
    else:
        monkeypatch.setenv("NEOFLOW_PROGRESS", env)
    monkeypatch.setattr("sys.stderr", _Tty() if tty else io.StringIO())
    assert progress.enabled(asked) is want


def test_bar_draws_on_a_terminal_only(monkeypatch):
    monkeypatch.delenv("NEOFLOW_PROGRESS", raising=False)
    for tty, drawn in ((True, True), (False, False)):
        err = _Tty() if tty else io.StringIO()
        monkeypatch.setattr("sys.stderr", err)
        bar = progress.bar(True, desc="work", total=4, unit="trial")
        for _ in range(4):
            bar.update()
        bar.close()
        assert ("work: 100%" in err.getvalue() and "4/4" in err.getvalue()) is drawn, err.getvalue()


def test_closed_stderr_means_no_bar(monkeypatch):
    err = io.StringIO()
    err.close()
    monkeypatch.delenv("NEOFLOW_PROGRESS", raising=False)
    monkeypatch.setattr("sys.stderr", err)
    assert not progress.enabled()


def test_a_slow_first_build_shows_a_bar(monkeypatch, tmp_path):
    """A build still running after neoflow._lib.PROGRESS_AFTER seconds shows a bar naming the op and its
    shapes (here after 0 s, with a fresh cache so that the build compiles), and a bundle write one too."""
    import neoflow
    import torch
    from neoflow import _lib

    monkeypatch.setenv("NEOFLOW_PROGRESS", "1")
    monkeypatch.setattr(_lib, "PROGRESS_AFTER", 0.0)
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    op = neoflow.op("Y[i, j] = X[i, j] * 3.0 + 0.5", name="progress_probe")
    op(torch.randn(7, 5))
    assert "neoflow: building progress_probe for (7, 5)" in err.getvalue()
    import time

    call = _lib.call

    def slow_call(*args):  # the bundle write made slower than the bar's threshold, for certain
        time.sleep(0.2)
        return call(*args)

    monkeypatch.setattr(_lib, "call", slow_call)
    monkeypatch.setattr(_lib, "PROGRESS_AFTER", 0.1)
    neoflow.bundle.save(tmp_path / "probe.nfb")
    assert "neoflow: writing bundle" in err.getvalue()
    assert (tmp_path / "probe.nfb").stat().st_size > 0
