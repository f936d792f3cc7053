import random
import sys
import unittest

from assay_worker import warm

from helpers import in_child


def warm_in_child(emit):
    import numpy  # noqa: F401 - the warmers only touch what is imported
    import pandas  # noqa: F401
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    random.seed(7)
    numpy.random.seed(7)
    expected = (random.random(), numpy.random.random())
    random.seed(7)
    numpy.random.seed(7)
    report = warm.run()
    emit({"report": report, "figures": plt.get_fignums(),
          "random_kept": [random.random(), numpy.random.random()] == list(expected),
          "pandas_backend": "pandas.plotting._matplotlib" in sys.modules})


class WarmTest(unittest.TestCase):
    def test_every_installed_warmer_runs_and_leaves_no_trace(self):
        [event, _stdout] = in_child(warm_in_child)[0]
        report = event["report"]
        for module in ("numpy", "pandas", "matplotlib.pyplot"):
            self.assertIsInstance(report[module], float, f"{module}: {report[module]}")
        self.assertEqual(event["figures"], [])
        self.assertTrue(event["random_kept"])
        self.assertTrue(event["pandas_backend"])


if __name__ == "__main__":
    unittest.main()
