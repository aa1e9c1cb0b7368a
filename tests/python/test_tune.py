"""Schedule tuning: neoflow.tune, the NEOFLOW_TUNE modes, Ctrl-C, a
corrupted tuning database, and the ``python -m neoflow.tunedb`` command line.

Every test gets its own cache directory (kernels and tuning database), so
records never leak between tests; the settings are restored afterwards."""

import hashlib
import logging
import os
import re
import struct
import subprocess
import sys
import warnings
from pathlib import Path

import neoflow
import neoflow.tunedb
import pytest
import torch
from neoflow import config, tuning
from neoflow._proto import tune_pb2

MATMUL = "C[i,j] += A[i,k] * B[k,j]"
F32 = {"rtol": 1e-4, "atol": 1e-5}
MAGIC = b"NFTUNE1\n"  # the tuning database's file header: magic, SHA-256, length
RECORD_NAME = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
def tune_cache(tmp_path):
    """A private cache directory, with NEOFLOW_TUNE=default."""
    cache = tmp_path / "cache"
    neoflow.configure(cache_dir=cache, tune="default")
    yield cache
    config.reset()
    neoflow.configure()  # back to the environment's settings (conftest's cache)


def matmul_inputs(dtype=torch.float32, m=24, k=20, n=28):
    return torch.randn(m, k, dtype=dtype), torch.randn(k, n, dtype=dtype)


def records(cache: Path) -> list[Path]:
    return sorted(p for p in (cache / "tune").iterdir() if RECORD_NAME.fullmatch(p.name))


def list_rows(text: str) -> dict[str, list[str]]:
    """`tunedb list` output as {op name: [id, op, best, default, speedup, trials, created]}."""
    lines = text.strip().splitlines()
    assert lines[0].split()[:2] == ["ID", "OP"], text
    return {row.split()[1]: row.split() for row in lines[1:-1]}


def count_calls(monkeypatch, name: str) -> list:
    """Counts the control-plane calls `name`, letting them through."""
    real, seen = neoflow._lib.call, []

    def call(fn, request, response_type):
        if fn == name:
            seen.append(fn)
        return real(fn, request, response_type)

    monkeypatch.setattr(neoflow._lib, "call", call)
    return seen


def check_matmul(op, a, b, **tol):
    """Forward and gradients of op against torch."""
    a1, b1 = a.clone().requires_grad_(), b.clone().requires_grad_()
    a2, b2 = a.clone().requires_grad_(), b.clone().requires_grad_()
    g = torch.randn(a.shape[0], b.shape[1], dtype=a.dtype)
    c1 = op(a1, b1)
    c1.backward(g)
    c2 = a2 @ b2
    c2.backward(g)
    torch.testing.assert_close(c1, c2, **tol)
    torch.testing.assert_close(a1.grad, a2.grad, **tol)
    torch.testing.assert_close(b1.grad, b2.grad, **tol)


def normalized(source: str) -> str:
    """A built kernel's source with its symbol named as in Op.c_source."""
    return re.sub(r"\bnf_\w+_[0-9a-f]{16}\b", "nf_kernel", source)


def test_tune_matmul_float32(tune_cache, capfd, caplog, monkeypatch):
    monkeypatch.setenv("NEOFLOW_PROGRESS", "1")  # bars on a captured stderr too
    caplog.set_level(logging.INFO, logger="neoflow.tune")
    op = neoflow.op(MATMUL, name="tune_mm")
    a, b = matmul_inputs()
    report = neoflow.tune(op, a, b, trials=8)
    assert isinstance(report, neoflow.TuneReport) and not report.interrupted
    assert [r.kernel for r in report] == ["tune_mm", "tune_mm_grad"]
    for r in report:
        assert isinstance(r, neoflow.KernelResult)
        assert r.trials == 8 and not r.already and not r.interrupted, r
        # The default schedule is one of the trials; the joint pass may choose a schedule slower alone.
        assert 0 < r.best_ms <= r.default_ms or "changed" in r.joint, r
    assert "tune_mm_grad" in str(report)
    err = capfd.readouterr().err
    assert re.search(r"tuning tune_mm: +100%.* 8/8 ", err), err
    assert re.search(r"tuning tune_mm_grad: +100%.* 8/8 ", err), err
    assert re.search(r"tuned tune_mm: 8 trials in [\d.]+ s, best [\d.]+ ms \([\d.]+x\)", caplog.text), caplog.text

    check_matmul(op, a, b, **F32)
    rows = list_rows(neoflow.tunedb.run("list"))
    assert set(rows) == {"tune_mm", "tune_mm_grad"}
    assert [rows[n][5] for n in rows] == ["8", "8"]
    assert len(records(tune_cache)) == 2


def test_gradient_is_tuned_with_its_forward_kernel(tune_cache, caplog):
    """After both searches, the gradient kernel's finalists are timed with the forward kernel's in pairs,
    the gradient reading what the forward wrote (X and W, and the saved H), as training runs them."""
    op = neoflow.op("H[b,j] += X[b,k] * W[j,k]\nZ[b,j] = tanh(H[b,j])", name="tune_joint")
    x, w = torch.randn(16, 24), torch.randn(20, 24)
    caplog.set_level(logging.INFO, logger="neoflow.tune")
    fwd, grad = neoflow.tune(op, x, w, trials=6)
    assert (fwd.kernel, grad.kernel) == ("tune_joint", "tune_joint_grad")
    assert fwd.joint == ""
    assert grad.joint.startswith("tuned with its forward kernel (sharing X, W, H): "), grad.joint
    assert re.search(r": \d+ schedule pairs timed in training order, (kept|changed) ", grad.joint), grad.joint
    assert 0 < grad.joint_after_ms <= grad.joint_before_ms, grad
    assert ("changed" in grad.joint) == (grad.joint_after_ms < grad.joint_before_ms), grad
    assert f"tune_joint_grad: {grad.joint}" in caplog.text
    assert set(list_rows(neoflow.tunedb.run("list"))) == {"tune_joint", "tune_joint_grad"}
    # Whichever pair was kept, the op computes what PyTorch does, forward and backward.
    xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
    z = op(xs, ws)
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    zt = torch.tanh(xt @ wt.T)
    torch.testing.assert_close(z, zt, **F32)
    g = torch.randn_like(z)
    torch.testing.assert_close(torch.autograd.grad(z, (xs, ws), g), torch.autograd.grad(zt, (xt, wt), g), **F32)
    # Tuned forward only: nothing to pair.
    op2 = neoflow.op("H[b,j] += X[b,k] * W[j,k]\nZ[b,j] = tanh(H[b,j])", name="tune_joint_fwd_only")
    (only,) = neoflow.tune(op2, x, w, trials=3, backward=False, progress=False)
    assert only.joint == ""


def test_tune_float64_gradcheck(tune_cache):
    op = neoflow.op(MATMUL, name="tune_mm64")
    a, b = matmul_inputs(torch.float64, 3, 4, 5)
    report = neoflow.tune(op, a, b, trials=4, progress=False)
    assert [(r.kernel, r.trials) for r in report] == [("tune_mm64", 4), ("tune_mm64_grad", 4)]
    a.requires_grad_()
    b.requires_grad_()
    assert torch.autograd.gradcheck(op, (a, b))
    check_matmul(op, a.detach(), b.detach(), rtol=1e-10, atol=1e-12)


def test_second_tune_uses_the_database_unless_forced(tune_cache, monkeypatch, capfd):
    op = neoflow.op(MATMUL, name="tune_again")
    a, b = matmul_inputs(m=8, k=6, n=10)
    first = neoflow.tune(op, a, b, trials=3, progress=False)
    assert [r.already for r in first] == [False, False]

    steps = count_calls(monkeypatch, "nf_tune_step")
    again = neoflow.tune(op, a, b, trials=3)
    assert steps == [], "a kernel with a record was measured again"
    assert [(r.kernel, r.already, r.trials) for r in again] == [("tune_again", True, 3), ("tune_again_grad", True, 3)]
    # A joint pass that changed the forward's choice stored it even if slower alone (see Tuning).
    replaced = "changed" in first[1].joint
    for old, new in zip(first, again):
        assert new.default_ms > 0 and (new.best_ms <= old.best_ms or (replaced and new.kernel == "tune_again"))
    assert "from the database" in str(again)
    assert "tuning" not in capfd.readouterr().err  # no progress bar: nothing measured

    forced = neoflow.tune(op, a, b, trials=3, force=True, progress=False)
    assert len(steps) == 6  # 3 trials for each of the 2 kernels
    assert [(r.already, r.trials) for r in forced] == [(False, 3), (False, 3)]
    check_matmul(op, a, b, **F32)


def test_tune_of_a_second_op_object_of_the_same_expression(tune_cache, tmp_path):
    """Two Op objects of one expression share their custom op; tuning either
    tunes its kernels, whichever ran before, in whatever cache directory."""
    a, b = matmul_inputs(m=8, k=6, n=10)
    ops = []
    for i in range(3):
        neoflow.configure(cache_dir=tmp_path / f"cache{i}")
        ops.append(neoflow.op(MATMUL, name="twin"))
        report = neoflow.tune(ops[-1], a, b, trials=2, progress=False)
        assert [(r.kernel, r.already, r.trials) for r in report] == [("twin", False, 2), ("twin_grad", False, 2)], i
    for op in ops:
        check_matmul(op, a, b, **F32)


def rewrite_export(path: Path, edit) -> None:
    """Applies edit to every record of an export file and frames it again."""
    data = path.read_bytes()
    assert data.startswith(MAGIC)
    export = tune_pb2.TuneExport.FromString(data[48:])
    for rec in export.records:
        edit(rec)
    payload = export.SerializeToString(deterministic=True)
    path.write_bytes(MAGIC + hashlib.sha256(payload).digest() + struct.pack("<Q", len(payload)) + payload)


def specialized_source(op, *tensors, tune: str) -> str:
    neoflow.configure(tune=tune)
    op.forget_kernels()
    return normalized(op.specialize(*tensors).c_source)


def test_tuned_schedule_is_applied(tune_cache):
    op = neoflow.op(MATMUL, name="tune_apply")
    a, b = matmul_inputs()
    default_src = op.c_source(a, b)  # source_only: always the default schedule
    assert specialized_source(op, a, b, tune="default") == default_src  # no record yet

    # 1. The tuner's own record. Whether it beat the default schedule
    # depends on timing, so check both ways round: the built source differs
    # from the default one exactly when the record holds a tiled schedule.
    # The kernel built before tuning is not reused: the next build (here in
    # the same settings, without reconfiguring) takes the record.
    neoflow.tune(op, a, b, trials=8, backward=False, progress=False)
    (row,) = list_rows(neoflow.tunedb.run("list")).values()
    shown = neoflow.tunedb.run("show", row[0])
    tiled = "tiling" in shown
    assert (normalized(op.specialize(a, b).c_source) != default_src) == tiled, shown
    assert specialized_source(op, a, b, tune="off") == default_src
    assert (specialized_source(op, a, b, tune="default") != default_src) == tiled, shown

    # 2. A record whose schedule is known: i split by 4 (loops i.t0 of 6
    # and i.t1 of 4, innermost), written through export/import. The tuner
    # cannot produce it (it splits spatial axes in two factors), so the
    # source built from it is distinguishable for sure. Its best time is 1 s,
    # which any tuning run beats (used in 3).
    export = tune_cache / "apply.nft"
    neoflow.tunedb.run("export", export)

    def tile_i(rec):
        del rec.schedules[:]
        t = rec.schedules.add().tiling
        t.splits.add(axis="i", factors=[4])
        t.loops.extend(["i.t0", "j", "k", "i.t1"])
        t.acc_at = 4  # no local accumulator: combine into C
        rec.best_seconds = 1.0
        rec.trials = 1000

    rewrite_export(export, tile_i)
    neoflow.tunedb.run("clear")
    assert "imported 1 records" in neoflow.tunedb.run("import", export)
    op.forget_kernels()
    tuned = normalized(op.specialize(a, b).c_source)  # import, too, makes the next build take the record
    assert tuned != default_src
    assert "for (int64_t vt0_i = 0; vt0_i < 6; vt0_i++)" in tuned, tuned
    assert "for (int64_t vt1_i = 0; vt1_i < 4; vt1_i++)" in tuned, tuned
    torch.testing.assert_close(op(a, b), a @ b, **F32)
    off = specialized_source(op, a, b, tune="off")
    assert off == default_src and "vt1_i" not in off
    torch.testing.assert_close(op(a, b), a @ b, **F32)
    assert specialized_source(op, a, b, tune="default") == tuned

    # 3. Tuning again replaces the slow record, and the next build in this
    # process takes the new one: the same source as a fresh build from it.
    report = neoflow.tune(op, a, b, trials=4, backward=False, force=True, progress=False)
    assert report[0].best_ms != 1e3  # measured, not the planted record's 1 s
    assert list_rows(neoflow.tunedb.run("list"))["tune_apply"][5] == "4"
    after = normalized(op.specialize(a, b).c_source)
    assert after == specialized_source(op, a, b, tune="default")
    torch.testing.assert_close(op(a, b), a @ b, **F32)


def test_new_shape_warm_starts_from_the_nearest_tuned_one(tune_cache):
    """A shape without a record builds with the schedule of the nearest tuned shape of the op, projected
    onto it (when that tuning beat the defaults by 1.25x), computes the right result, and the database
    records carry the family and genome that make this work; another dtype does not take it."""
    op = neoflow.op(MATMUL, name="tune_warm")
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    (rep,) = neoflow.tune(op, a, b, trials=8, backward=False, progress=False)
    (path,) = records(tune_cache)
    rec = tune_pb2.TuneRecord()
    rec.ParseFromString(path.read_bytes()[len(MAGIC) + 40 :])
    assert rec.family and len(rec.genome) > 0
    x, y = torch.randn(240, 256), torch.randn(256, 272)
    default_src = op.c_source(x, y)
    warm_src = normalized(op.specialize(x, y).c_source)
    assert (warm_src != default_src) == (rep.default_ms >= 1.25 * rep.best_ms), (rep.default_ms, rep.best_ms)
    torch.testing.assert_close(op(x, y), x @ y, rtol=1e-4, atol=1e-4)  # sums of 256 products
    assert normalized(op.specialize(x.double(), y.double()).c_source) == op.c_source(x.double(), y.double())


def test_tune_full_tunes_new_shapes_on_first_use(tune_cache, capfd, caplog):
    caplog.set_level(logging.INFO, logger="neoflow.tune")
    neoflow.configure(tune="full")
    op = neoflow.op("Y[i] = X[i] * 2.0", name="tune_full_double")
    x = torch.randn(4)
    assert "no records" in neoflow.tunedb.run("list")
    torch.testing.assert_close(op(x), x * 2.0)
    rows = list_rows(neoflow.tunedb.run("list"))
    assert list(rows) == ["tune_full_double"]
    err = capfd.readouterr().err
    assert "tuning" not in err  # stderr is no terminal: no bar
    # As many trials as the record says (a space this small may be
    # exhausted before the default budget of 64).
    m = re.findall(r"tuned tune_full_double: (\d+) trials", caplog.text)
    assert m == [rows["tune_full_double"][5]], caplog.text

    # Built now: neither the second call nor a rebuild tunes again.
    torch.testing.assert_close(op(x + 1), (x + 1) * 2.0)
    op.forget_kernels()
    torch.testing.assert_close(op(x), x * 2.0)
    assert "tuning" not in capfd.readouterr().err
    assert len(records(tune_cache)) == 1


def test_invalid_tune_mode_is_a_clear_error(tune_cache, monkeypatch):
    with pytest.raises(ValueError, match=r"NEOFLOW_TUNE.*'sometimes'.*off, default, full"):
        neoflow.configure(tune="sometimes")
    assert config.tune_mode() == "default"  # the bad value was not applied
    with monkeypatch.context() as m:
        m.setenv("NEOFLOW_TUNE", "always")
        config.reset()
        try:
            with pytest.raises(ValueError, match=r"NEOFLOW_TUNE.*'always'"):
                neoflow.configure()
        finally:
            config.reset()


def test_tune_rejects_bad_arguments(tune_cache):
    op = neoflow.op(MATMUL, name="tune_bad")
    a, b = matmul_inputs(m=2, k=3, n=4)
    with pytest.raises(TypeError, match="expected a neoflow op, got str"):
        neoflow.tune("C[i] = A[i]", a)
    with pytest.raises(TypeError, match="example input 1 is a list, not a tensor"):
        neoflow.tune(op, a, [[1.0]])
    with pytest.raises(ValueError, match="trials must be at least 1, got 0"):
        neoflow.tune(op, a, b, trials=0)
    with pytest.raises(ValueError, match="seconds must be positive, got -1"):
        neoflow.tune(op, a, b, seconds=-1)
    with pytest.raises(TypeError, match="trials must be an int, got float"):
        neoflow.tune(op, a, b, trials=2.5)
    with pytest.raises(TypeError, match="takes 2 inputs"):
        neoflow.tune(op, a)
    assert tuning._active is None  # a failed tune leaves no session behind
    assert "no records" in neoflow.tunedb.run("list")


def test_ctrl_c_keeps_the_best_so_far(tune_cache, monkeypatch, caplog):
    op = neoflow.op(MATMUL, name="tune_interrupted")
    a, b = matmul_inputs()
    real, steps = neoflow._lib.call, []

    def call(fn, request, response_type):
        if fn == "nf_tune_step":
            steps.append(fn)
            if len(steps) == 3:
                raise KeyboardInterrupt  # Ctrl-C during the third trial
        return real(fn, request, response_type)

    monkeypatch.setattr(neoflow._lib, "call", call)
    report = neoflow.tune(op, a, b, trials=20)
    monkeypatch.setattr(neoflow._lib, "call", real)

    assert report.interrupted
    assert len(steps) == 3, "tuning went on after Ctrl-C"
    (r,) = report  # stopped before the gradient kernel
    assert (r.kernel, r.trials, r.interrupted) == ("tune_interrupted", 2, True)
    assert 0 < r.best_ms <= r.default_ms
    assert "interrupted: kept the best so far" in caplog.text
    rows = list_rows(neoflow.tunedb.run("list"))
    assert list(rows) == ["tune_interrupted"] and rows["tune_interrupted"][5] == "2"
    assert tuning._active is None

    check_matmul(op, a, b, **F32)
    # The next tune starts afresh: the forward record is kept, the gradient tuned.
    again = neoflow.tune(op, a, b, trials=2, progress=False)
    assert [(x.already, x.interrupted) for x in again] == [(True, False), (False, False)]
    assert not again.interrupted


def test_corrupted_database_warns_and_falls_back(tune_cache):
    op = neoflow.op(MATMUL, name="tune_corrupt")
    a, b = matmul_inputs(m=6, k=5, n=7)
    neoflow.tune(op, a, b, trials=3, progress=False)
    files = records(tune_cache)
    assert len(files) == 2
    files[0].write_bytes(files[0].read_bytes()[:20])  # truncated inside the header
    files[1].write_bytes(b"this is not a tuning record\n" * 3)

    neoflow.configure(cache_dir=tune_cache)  # a fresh database handle, as in a new process
    op.forget_kernels()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_matmul(op, a, b, **F32)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    for f in files:
        assert any(str(f) in m and "is corrupt" in m for m in messages), (f, messages)
        assert not f.exists() and f.with_name(f.name + ".corrupt").exists()
    assert "no records" in neoflow.tunedb.run("list")

    # list on a corrupt entry does not fail either: it leaves it out, moves it
    # aside and reports it as a warning of its own, not of a later build.
    files[1].with_name(files[1].name + ".corrupt").rename(files[1])
    with pytest.warns(RuntimeWarning, match="is corrupt") as listed:
        assert "no records" in neoflow.tunedb.run("list")
    assert any(str(files[1]) in str(w.message) for w in listed)
    assert not files[1].exists()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing left pending for an unrelated build
        neoflow.op("Y[i] = X[i] + 1.0", name="tune_after")(torch.ones(3))


def tunedb_cli(cache: Path, *args) -> subprocess.CompletedProcess:
    env = dict(os.environ, NEOFLOW_CACHE_DIR=str(cache))
    return subprocess.run(
        [sys.executable, "-m", "neoflow.tunedb", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_tunedb_command_line(tune_cache, tmp_path, capsys):
    op = neoflow.op(MATMUL, name="tune_cli")
    a, b = matmul_inputs(m=4, k=3, n=5)
    neoflow.tune(op, a, b, trials=2, backward=False, progress=False)
    (record,) = records(tune_cache)

    listed = tunedb_cli(tune_cache, "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr == ""
    assert list(list_rows(listed.stdout)) == ["tune_cli"]
    assert list_rows(listed.stdout)["tune_cli"][0] == record.name[:12]

    shown = tunedb_cli(tune_cache, "show", record.name[:6])
    assert shown.returncode == 0, shown.stderr
    assert f"id         {record.name}" in shown.stdout and "tune_cli" in shown.stdout
    assert "A:float32[4,3]" in shown.stdout

    export = tmp_path / "records.nft"
    out = tunedb_cli(tune_cache, "export", export)
    assert out.returncode == 0 and "exported 1 records" in out.stdout, out.stderr
    out = tunedb_cli(tune_cache, "clear")
    assert out.returncode == 0 and "removed 1 records" in out.stdout, out.stderr
    assert records(tune_cache) == []
    out = tunedb_cli(tune_cache, "import", export)
    assert out.returncode == 0 and "imported 1 records" in out.stdout, out.stderr
    assert [p.name for p in records(tune_cache)] == [record.name]

    bad = tunedb_cli(tune_cache, "frobnicate")
    assert bad.returncode != 0 and bad.stdout == ""
    assert "invalid choice: 'frobnicate'" in bad.stderr and "list" in bad.stderr and "show" in bad.stderr

    helped = tunedb_cli(tune_cache, "--help")
    assert helped.returncode == 0, helped.stderr
    assert "python -m neoflow.tunedb" in helped.stdout and "export" in helped.stdout
    helped = tunedb_cli(tune_cache, "export", "--help")
    assert helped.returncode == 0 and "file" in helped.stdout and "ID" in helped.stdout, helped.stderr

    # The same entry point in this process (no interpreter start-up to pay).
    capsys.readouterr()
    assert neoflow.tunedb.main(["list"]) == 0
    assert list(list_rows(capsys.readouterr().out)) == ["tune_cli"]
    assert neoflow.tunedb.main(["show", "ffffffff"]) == 1
    assert "no record with id prefix" in capsys.readouterr().err
    assert neoflow.tunedb.main([]) == 2  # no command: usage, and a failure status
    assert "usage: python -m neoflow.tunedb" in capsys.readouterr().out


def test_tune_session_tunes_every_kernel_a_step_builds(tune_cache):
    scale = neoflow.op("Y[i,j] = X[i,j] * 2.0", name="sess_scale")
    mm = neoflow.op(MATMUL, name="sess_mm")
    a, b = matmul_inputs(m=6, k=5, n=7)
    a.requires_grad_()

    def step():
        loss = scale(mm(a, b)).sum()
        loss.backward()
        return loss

    with neoflow.tune_session(trials=3, progress=False) as report:
        loss = step()
    assert sorted(r.kernel for r in report) == ["sess_mm", "sess_mm_grad", "sess_scale", "sess_scale_grad"]
    assert all(r.trials == 3 and not r.already for r in report), report
    torch.testing.assert_close(loss, ((a @ b) * 2.0).sum())
    assert len(records(tune_cache)) == 4

    # Outside the block nothing is tuned; inside another, the records are used.
    a.grad = None
    step()
    mm.forget_kernels()
    scale.forget_kernels()
    with neoflow.tune_session(trials=3, progress=False) as again:
        step()
    assert all(r.already for r in again) and len(again) == 4, again


def test_tune_session_rejects_bad_arguments_and_nesting(tune_cache):
    with pytest.raises(TypeError, match="tune_session: trials must be an int"):
        neoflow.tune_session(trials=2.5)
    with pytest.raises(ValueError, match="tune_session: seconds must be positive"):
        neoflow.tune_session(seconds=-1)
    op = neoflow.op(MATMUL, name="sess_nested")
    with neoflow.tune_session(trials=2, progress=False):
        with pytest.raises(RuntimeError, match="already tuning"):
            neoflow.tune(op, *matmul_inputs(m=3, k=3, n=3), trials=2)


def test_untuned_large_contractions_are_register_tiled(tune_cache):
    """With NEOFLOW_TUNE=off (nothing picks schedules later) and background (training runs on while the
    worker tunes) a contraction of 1M points or more is built register-tiled, its accumulators unrolled, and
    computes what PyTorch does; the default mode builds the plain loop nest (it compiles fastest; the
    background picks the tiles); a small one stays plain in all three."""
    op = neoflow.op("UH[b, g] += U[g, j] * H[b, j]", name="tune_first_tiles")
    u, h = torch.randn(512, 256), torch.randn(16, 256)
    plain = specialized_source(op, u, h, tune="default")
    assert "GCC unroll" not in plain and normalized(op.c_source(u, h)) == plain
    tiled = specialized_source(op, u, h, tune="off")
    assert tiled != plain and tiled.count("#pragma GCC unroll 8") >= 4, tiled
    # background on another shape: no pick of the default mode's queue has a record of it yet
    u2 = torch.randn(1024, 256)
    assert specialized_source(op, u2, h, tune="background") == specialized_source(op, u2, h, tune="off")
    assert normalized(op.c_source(u, h)) == tiled
    torch.testing.assert_close(op(u, h), h @ u.T, rtol=1e-4, atol=1e-4)  # sums of 256 products, reassociated
    gemm = neoflow.op(MATMUL, name="tune_first_gemm")
    a, b = torch.randn(64, 32), torch.randn(32, 48)
    assert specialized_source(gemm, a, b, tune="off") == normalized(gemm.c_source(a, b))
    assert "GCC unroll" not in normalized(gemm.c_source(a, b))
