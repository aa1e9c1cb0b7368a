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
