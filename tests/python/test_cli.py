"""The command line: python -m neoflow info | cache clear | tunedb | bundle | explain."""

import argparse
import os
import subprocess
import sys

import neoflow.version
import pytest
from neoflow import cli


def test_no_command_prints_the_commands(capsys):
    assert cli.main([]) == 2
    out = capsys.readouterr().out
    for cmd in ("info", "cache", "tunedb", "explain"):
        assert cmd in out
    with pytest.raises(SystemExit) as e:
        cli.main(["--help"])
    assert e.value.code == 0


def test_info(capsys):
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    fields = dict(line.split(None, 1) for line in out.splitlines() if line.strip() and not line.startswith("tune mode"))
    assert fields["neoflow"].strip() == neoflow.version.__version__
    assert os.path.exists(fields["library"].strip())
    for key in ("compiler", "cuda", "cache", "tuning"):
        assert key in fields, out


def test_info_names_a_missing_compiler(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("NEOFLOW_CC", str(tmp_path / "no-such-cc"))
    assert cli.main(["info"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("compiler"))
    assert "no-such-cc: not found" in line and "NEOFLOW_CC" in line


def _cli(*args, cache, env=None):
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache), **(env or {}))
    cmd = [sys.executable, "-m", "neoflow", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


BUILD = """
import torch, neoflow
neoflow.op("C[i] = A[i] * 2.0")(torch.ones(8))
"""


def test_cache_clear_removes_kernels_only(tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache))
    built = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    kernel_dirs = [p for p in cache.iterdir() if p.is_dir() and len(p.name) == 2]
    assert kernel_dirs, list(cache.iterdir())
    (cache / "notes.txt").write_text("mine")  # not neoflow's: kept
    (cache / "tune").mkdir(exist_ok=True)
    (cache / "tune" / ("ab" * 16)).write_text("a record")

    out = _cli("info", cache=cache)
    assert out.returncode == 0, out.stderr
    assert "1 records" in out.stdout

    out = _cli("cache", "clear", cache=cache)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("removed ") and "kept 1 tuning records" in out.stdout
    assert not any(p.exists() for p in kernel_dirs)
    assert (cache / "notes.txt").read_text() == "mine"
    assert (cache / "tune" / ("ab" * 16)).exists()

    out = _cli("cache", "clear", "--all", cache=cache)
    assert out.returncode == 0, out.stderr
    assert not (cache / "tune").exists() and (cache / "notes.txt").exists()
    # and the next build compiles again
    again = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr


def test_explain_prints_the_gradient_and_the_fusion(capsys):
    assert cli.main(["explain", "C[i,j] += A[i,k] * B[k,j]", "--shapes", "4x5", "5x6"]) == 0
    out = capsys.readouterr().out
    assert "# gradient" in out and "# tangent (forward mode)" in out and "# fusion" in out
    assert "d_A[i, k] += d_C[i, j] * B[k, j]" in out
    assert "t_C[i, j] += t_A[i, k] * B[k, j] + t_B[k, j] * A[i, k]" in out
    assert "C[i, j] += A[i, k] * B[k, j]  // i < 4, j < 6; over k < 5" in out


def test_explain_takes_sizes_and_several_statements(capsys):
    src = "T[i] = A[i] * 2.0; C[i] += T[i] * B[i, j]"
    assert cli.main(["explain", src, "--shapes", "3", "3x4", "--dtype", "float64"]) == 0
    out = capsys.readouterr().out
    assert "d_B" in out and "float64" in out


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["C[i,j] += A[i,k] *", "--shapes", "4x5"], 1, "expected expression"),
        (["C[i] = A[i]", "--shapes", "4", "5"], 2, "one shape per input (A), got 2"),
        (["C[i] = A[i] * B[i]", "--shapes", "4", "5"], 1, "B"),
    ],
)
def test_explain_reports_bad_input(capsys, args, code, message):
    assert cli.main(["explain", *args]) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("shape", ["4xq", "-1", "x"])
def test_explain_rejects_a_malformed_shape(capsys, shape):
    with pytest.raises(SystemExit) as e:
        cli.main(["explain", "C[i] = A[i]", "--shapes", shape])
    assert e.value.code == 2
    assert "--shapes" in capsys.readouterr().err


def test_tunedb_is_the_tuning_database_command(capsys):
    assert cli.main(["tunedb", "list"]) == 0
    assert cli.main(["tunedb", "show", "zz"]) == 1
    assert "neoflow.tunedb" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"neoflow {neoflow.version.__version__}"


def _command_paths(parser, path=()):
    """Every command and subcommand of parser, as argument lists."""
    yield list(path)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _command_paths(sub, (*path, name))


def test_every_command_takes_help(capsys):
    paths = list(_command_paths(cli._parser()))
    assert ["tunedb", "export"] in paths and ["bundle", "check"] in paths and len(paths) >= 14, paths
    for path in paths:
        with pytest.raises(SystemExit) as e:
            cli.main([*path, "--help"])
        out = capsys.readouterr().out
        assert e.value.code == 0, path
        assert out.startswith(f"usage: neoflow {' '.join(path)}".rstrip()), (path, out)


def test_tunedb_checks_its_arguments_before_the_database(capsys):
    cases = [
        (["tunedb", "show"], "the following arguments are required: id"),
        (["tunedb", "import", "a", "b"], "unrecognized arguments: b"),
        (["tunedb", "frob"], "invalid choice: 'frob'"),
    ]
    for args, message in cases:
        with pytest.raises(SystemExit) as e:
            cli.main(args)
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "usage: neoflow" in err and message in err, err


def test_python_m_neoflow_tunedb(tmp_path):
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path))
    cmd = [sys.executable, "-m", "neoflow.tunedb"]
    out = subprocess.run([*cmd, "--help"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "export" in out.stdout, out.stderr
    out = subprocess.run([*cmd, "list"], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr


def test_python_m_neoflow(tmp_path):
    out = _cli("info", cache=tmp_path / "fresh")
    assert out.returncode == 0, out.stderr
    assert "0 records" in out.stdout
    out = _cli("cache", cache=tmp_path / "fresh")
    assert out.returncode == 2 and "ACTION" in out.stderr


SAVE = """
import sys, torch, neoflow
neoflow.op("C[i] = A[i] * 2.0", name="twice")(torch.ones(8))
neoflow.bundle.save(sys.argv[1])
"""


def test_bundle_info_and_check(tmp_path):
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(tmp_path / "cache"))
    path = tmp_path / "k.nfb"
    made = subprocess.run([sys.executable, "-c", SAVE, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert made.returncode == 0, made.stderr

    out = _cli("bundle", "info", str(path), cache=tmp_path / "other")
    assert out.returncode == 0, out.stderr
    assert "made by neoflow " + neoflow.version.__version__ in out.stdout
    assert "twice x1" in out.stdout

    out = _cli("bundle", "check", str(path), cache=tmp_path / "other")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok: ") and "1 kernels" in out.stdout
    assert not (tmp_path / "other" / "tune").exists()  # the check left the user's cache alone

    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF  # inside a kernel: its checksum no longer matches
    bad = tmp_path / "bad.nfb"
    bad.write_bytes(bytes(data))
    out = _cli("bundle", "check", str(bad), cache=tmp_path / "other")
    assert out.returncode == 1 and "Traceback" not in out.stderr and "neoflow bundle:" in out.stderr

    (tmp_path / "not.nfb").write_text("hello")
    for action in ("info", "check"):
        out = _cli("bundle", action, str(tmp_path / "not.nfb"), cache=tmp_path / "other")
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr


def test_explain_an_op_of_a_file(tmp_path, capsys):
    f = tmp_path / "ops.py"
    f.write_text('import neoflow\nscale = neoflow.op("C[i] = A[i] * 3.0 + B[i]")\nthree = 3\n')
    assert cli.main(["explain", f"{f}:scale", "--shapes", "4", "4"]) == 0
    assert "d_B[i] = d_C[i]" in capsys.readouterr().out
    for name, what in (("three", "an object of type int"), ("nowhere", "nothing")):
        assert cli.main(["explain", f"{f}:{name}", "--shapes", "4"]) == 1
        err = capsys.readouterr().err
        assert f"defines {what} as {name}, not a neoflow op" in err


def test_output_cut_short_is_no_error(monkeypatch, capsys):
    r, w = os.pipe()
    os.close(r)  # the reader went away, as `| head -1`'s does
    out = os.fdopen(w, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", out)
    try:
        assert cli.main(["explain", "C[i,j] += A[i,k] * B[k,j]", "--shapes", "4x5", "5x6"]) == 0
    finally:
        monkeypatch.undo()
        out.close()
    assert capsys.readouterr().err == ""
