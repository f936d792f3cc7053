#!/usr/bin/env python3
"""What the integrity audit hook costs a job (docs/sandbox.md, "Faking a pass").

Python calls an audit hook for every audited event, and a plotting job raises thousands. This
prints the time of one audited event (`id()`, the commonest) with no hook and with the
witness's hook installed as a job installs it, then, where pandas and matplotlib import, the
time of the engine bench's pandas + matplotlib job run in this process without a hook and how
many audited events it raises: what the hook costs that job.

    PYTHON bench/audit_hook.py [WORKER_DIR]

PYTHON is an environment's interpreter with the runner's needs (the `test` profile's, for
the job count); WORKER_DIR holds `assay_worker` (default: this checkout's), so that another
commit's worker can be measured the same way (`git worktree add`).
"""

import collections
import re
import statistics
import sys
import time
import timeit
from pathlib import Path

WORKER = Path(sys.argv[1]) if len(sys.argv) > 1 else (
    Path(__file__).resolve().parent.parent / "crates/assay-sandbox/python")
sys.path.insert(0, str(WORKER))

from assay_worker import integrity, unittest_job  # noqa: E402

# The engine bench's pandas + matplotlib job, read from the bench itself so that both time
# the same job.
ENGINE_BENCH = (Path(__file__).resolve().parent.parent
                / "crates/assay-sandbox/benches/engine.rs").read_text()


def _bench_source(name):
    return re.search(rf'const {name}: &str = r#"(.*?)"#;', ENGINE_BENCH, re.S).group(1)


PLOT_CODE, PLOT_TEST = _bench_source("PLOT_CODE"), _bench_source("PLOT_TEST")
N = 300_000


def per_event():
    """Nanoseconds of one `id()` call: the best of five runs of N."""
    best = min(timeit.repeat("id(x)", globals={"x": object()}, number=N, repeat=5))
    return best / N * 1e9


def plot_job():
    """Runs the plotting job once in a fresh module; None where pandas or matplotlib do not
    import."""
    try:
        import matplotlib
        import pandas  # noqa: F401
    except ImportError:
        return None
    matplotlib.use("Agg")
    spec = {"code": PLOT_CODE, "test": PLOT_TEST, "guards": False, "test_class": "TestCases"}
    runs = iter(range(1 << 30))

    def run():
        unittest_job.run(dict(spec), lambda event: None, f"plot{next(runs)}", watch=False)
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return run


def job_milliseconds(run):
    """The median of 30 runs of the job, after three to warm it up."""
    for _ in range(3):
        run()
    times = []
    for _ in range(30):
        start = time.perf_counter()
        run()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def job_events(run):
    """Audited events one run of the job raises, and the commonest with its count."""
    counted = collections.Counter()
    counting = [False]

    def count(event, args):
        if counting[0]:
            counted[event] += 1

    sys.addaudithook(count)
    counting[0] = True
    run()
    counting[0] = False
    return sum(counted.values()), counted.most_common(1)[0]


def main():
    compiled = integrity.Compiled("def task_func():\n    pass\n",
                                  "import unittest\nclass TestCases(unittest.TestCase):\n"
                                  "    def test_a(self):\n        task_func()\n", "__test__.py")
    witness = integrity.Witness(compiled, integrity.Snapshot(), lambda event: None)
    # Hooks cannot be removed: everything timed without one comes first.
    run = plot_job()
    job = job_milliseconds(run) if run else None
    none = per_event()
    # As the runner installs it (older workers installed the bound method itself).
    sys.addaudithook(witness.hook() if hasattr(witness, "hook") else witness.audit)
    hooked = per_event()
    print(f"one audited event (id()): {none:.0f} ns with no hook, {hooked:.0f} ns with the "
          f"witness's hook ({WORKER})")
    if run is None:
        print("pandas + matplotlib job: pandas or matplotlib does not import here")
        return
    events, (commonest, times) = job_events(run)
    cost = events * (hooked - none) / 1e6
    print(f"pandas + matplotlib job: {job:.1f} ms without a hook (median of 30); {events} "
          f"audited events ({times} of them {commonest}); the hook costs it {cost:.2f} ms "
          f"({cost / job:.1%})")


if __name__ == "__main__":
    main()
