"""The backend's measured choice between a compiled graph and its eager operators (neoflow.backend.choice),
on a fake clock: which variant each call runs, which is kept, what the report and explain say."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import neoflow  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from backend_models import MLP, TOL, fresh_dynamo  # noqa: E402, F401
from neoflow.backend import choice, graphs, subgraph  # noqa: E402

pytestmark = pytest.mark.usefixtures("fresh_dynamo")


class Clock:
    """perf_counter_ns for choice: advanced by the test, by what each call 'took'."""

    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(choice.time, "perf_counter_ns", c)
    return c


@pytest.mark.parametrize(("compiled_ns", "eager_ns", "kept"), [(3, 5, "neoflow"), (5, 3, "eager"), (4, 4, "neoflow")])
def test_the_faster_variant_is_kept(clock, compiled_ns, eager_ns, kept):
    ran = []

    def variant(name, ns):
        def run(x):
            ran.append(name)
            clock.now += ns
            return (name, x)

        return run

    made = choice.Graph()
    made.reports = reports = [{"graph": "forward", "choice": None}, {"graph": "backward", "choice": None}]
    c = choice.Chosen(variant("neoflow", compiled_ns), variant("eager", eager_ns), made)
    outs = [c(k) for k in range(choice.TRIAL + 3)]
    assert [x for _, x in outs] == list(range(choice.TRIAL + 3))  # every call's arguments reach its variant
    first_kept = choice.WARM + 1 + 2 * choice.SAMPLES  # no subgraphs to wait for
    trial = ran[:first_kept]
    assert trial[: choice.WARM] == ["neoflow"] * choice.WARM and trial[choice.WARM] == "eager"
    assert trial[choice.WARM + 1 :] == ["neoflow", "eager"] * choice.SAMPLES
    assert ran[first_kept:] == [kept] * (choice.TRIAL + 3 - first_kept)
    want = {"kept": kept, "neoflow_ms": compiled_ns / 1e6, "eager_ms": eager_ns / 1e6, "samples": choice.SAMPLES}
    assert all(r["choice"] == want for r in reports)


class Twins:
    """The MLP under the backend and its eager twin, stepped together (training, same inputs); counts the
    calls of lowered subgraphs' kernels."""

    def __init__(self, monkeypatch, **opts):
        self.kernel_calls = []
        run, entry = subgraph.Subgraph._run, subgraph.Subgraph.entry
        monkeypatch.setattr(subgraph.Subgraph, "_run", lambda sub, args: self.kernel_calls.append(1) or run(sub, args))

        def counted(sub):  # the C call launches the kernel where the subgraph holds it (fast), else goes to _run
            call = entry(sub)
            return lambda *args: (sub.fast is not None and self.kernel_calls.append(1)) or call(*args)

        monkeypatch.setattr(subgraph.Subgraph, "entry", counted)
        torch.manual_seed(0)
        self.model = MLP()
        self.twin = MLP()
        self.twin.load_state_dict(self.model.state_dict())
        self.f = neoflow.compile(self.twin, **opts)

    def step(self) -> bool:
        """One step of both, checked against each other; whether a kernel ran in it."""
        x = torch.randn(4, 16)
        before = len(self.kernel_calls)
        y = self.f(x)
        y.square().mean().backward()
        ref = self.model(x)
        ref.square().mean().backward()
        torch.testing.assert_close(y, ref, **TOL)
        for p, q in zip(self.model.parameters(), self.twin.parameters()):
            torch.testing.assert_close(q.grad, p.grad, **TOL)
        return len(self.kernel_calls) > before


def _steps(clock, monkeypatch, n, compiled_ns, eager_ns, **opts):
    """n training steps of the MLP under the backend against eager twins; each step advances the clock by
    compiled_ns when a kernel ran in it, else by eager_ns. Returns whether each step ran a kernel."""
    twins = Twins(monkeypatch, **opts)
    ran = []
    for _ in range(n):
        ran.append(twins.step())
        clock.now += compiled_ns if ran[-1] else eager_ns
    return ran


def test_a_graph_slower_than_eager_runs_in_eager(clock, monkeypatch, capsys):
    ran = _steps(clock, monkeypatch, choice.TRIAL + 3, compiled_ns=2_000_000, eager_ns=1_000_000, explain=True)
    assert ran[0] and not any(ran[choice.TRIAL - 1 :])  # the first call builds and runs the kernels
    fw, bw = neoflow.compile_report()
    want = {"kept": "eager", "neoflow_ms": 2.0, "eager_ms": 1.0, "samples": choice.SAMPLES}
    assert fw["choice"] == bw["choice"] == want
    err = capsys.readouterr().err
    assert (
        "the forward and backward graph runs in eager (all its operators, as without the backend): "
        "2.000 ms a call compiled, 1.000 ms in eager" in err
    )


def test_a_graph_faster_compiled_stays_compiled(clock, monkeypatch):
    ran = _steps(clock, monkeypatch, choice.TRIAL + 3, compiled_ns=1, eager_ns=2)
    assert all(ran[choice.TRIAL - 1 :])
    assert all(r["choice"]["kept"] == "neoflow" for r in neoflow.compile_report())
    assert "runs in neoflow" in graphs.explain_text(neoflow.compile_report()[0])


def test_measure_false_runs_compiled_always(clock, monkeypatch):
    ran = _steps(clock, monkeypatch, choice.TRIAL + 1, compiled_ns=2, eager_ns=1, measure=False)
    assert all(ran)
    assert all(r["choice"] is None for r in neoflow.compile_report())


def test_measure_must_be_a_bool():
    with pytest.raises(TypeError, match="measure='yes': expected True or False"):
        neoflow.compile(MLP(), measure="yes")
    with pytest.raises(Exception, match="measure=1: expected True or False"):
        torch.compile(MLP(), backend="neoflow", options={"measure": 1})(torch.randn(2, 16))


def test_turns_of_a_subgraph():
    t = choice.Turns()
    order = []
    for _ in range(2 + 2 * choice.SUBGRAPH_SAMPLES):
        v = t.next()
        order.append(v)
        t.record(v, 7 if v == "neoflow" else 5)
    assert order[:2] == ["neoflow", "eager"]  # the build, the eager warm-up: untimed
    assert order[2:] == ["neoflow", "eager"] * choice.SUBGRAPH_SAMPLES
    assert t.kept == "eager" and t.figures == {"kept": "eager", "neoflow_us": 0.007, "eager_us": 0.005}


def test_a_subgraph_slower_than_its_eager_operators_runs_in_eager(clock, monkeypatch):
    """The graph's kernels 'take' 1 ms a call on the fake clock, its eager operators nothing: each subgraph
    keeps its eager operators after its turns, the results stay eager's, and the report says so."""
    twins = Twins(monkeypatch)
    run = subgraph.Subgraph._run

    def slow(self, args):
        clock.now += 1_000_000
        return run(self, args)

    monkeypatch.setattr(subgraph.Subgraph, "_run", slow)
    for _ in range(2 + 2 * choice.SUBGRAPH_SAMPLES):
        twins.step()
    reps = neoflow.compile_report()
    assert all(r["measured"] and all(m["kept"] == "eager" for m in r["measured"]) for r in reps)
    assert sum(len(r["measured"]) for r in reps) == sum(r["subgraphs"] for r in reps)
    assert all(m["neoflow_us"] == 1000.0 and m["eager_us"] == 0.0 for r in reps for m in r["measured"])
    assert "operator calls runs in eager: 1000.0 us a call lowered, 0.0 us in eager" in graphs.explain_text(reps[0])
    monkeypatch.setattr(subgraph.Subgraph, "_run", lambda self, args: pytest.fail("a kernel kept out ran"))
    for _ in range(3):
        twins.step()


def test_kernels_are_timed_once_the_background_tuner_is_done_with_them(clock, monkeypatch):
    """While the tuner works on a subgraph's kernels, they run untimed and the graph's trial waits (past
    WARM_MAX calls); then the turns and the graph's trial follow."""
    from neoflow import tuning

    busy = {"on": True}

    def tuner_busy(names):
        assert all(n.startswith("fx_") for n in names)
        return busy["on"]

    monkeypatch.setattr(tuning, "tuner_busy", tuner_busy)
    monkeypatch.setattr(subgraph, "TUNER_POLL", 0.0)
    twins = Twins(monkeypatch)
    ran = []
    for _ in range(choice.WARM_MAX + 4):
        ran.append(twins.step())
        clock.now += 1
    assert all(ran)  # compiled all along: the kernels untimed, the graph's trial not begun
    assert all(r["choice"] is None and not r["measured"] for r in neoflow.compile_report())
    busy["on"] = False
    for _ in range(choice.TRIAL + 2 * choice.SUBGRAPH_SAMPLES + 4):
        twins.step()
        clock.now += 1
    reps = neoflow.compile_report()
    assert all(r["choice"] and len(r["measured"]) == r["subgraphs"] for r in reps)
