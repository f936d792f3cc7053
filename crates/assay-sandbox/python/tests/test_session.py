import signal
import threading
import unittest
import warnings

from assay_worker import session
from helpers import in_child


def run_cells(codes, emit):
    """In a forked child (the shell, matplotlib's state and the streams stay there): each
    cell's (status, result, error, number of figures, why figures were dropped)."""
    # As in a job, where library DeprecationWarnings are hidden (unittest shows them all; IPython
    # 8.26 with the test profile's matplotlib 3.7 raises some while drawing inline).
    warnings.simplefilter("ignore", DeprecationWarning)
    state = session._State()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, session._raise_in_cell(KeyboardInterrupt, state))
    session.merge_streams()
    shell = session.make_shell(state)
    for code in codes:
        result, error = session.run_cell(shell, code, state)
        emit({"ev": "cell", "status": "error" if error else "ok",
              "figure_error": state.figure_error, "result": result, "error": error,
              "figures": len(state.figures)})


def cells(*codes):
    events, status = in_child(run_cells, list(codes))
    crashes = [e for e in events if e["ev"] == "crash"]
    assert not crashes, crashes[0]["traceback"]
    output = events[-1]["text"]
    return [e for e in events if e["ev"] == "cell"], output


class CellTest(unittest.TestCase):
    def test_state_persists_and_the_last_value_is_shown_as_ipython_does(self):
        results, _ = cells("x = 20", "x + 1", "y = x * 2", "None", "'text'", "y;", "_")
        self.assertEqual([(r["status"], r["result"]) for r in results],
                         [("ok", None), ("ok", "21"), ("ok", None), ("ok", None),
                          ("ok", "'text'"), ("ok", None), ("ok", "'text'")])

    def test_errors_are_name_and_message_and_keep_the_state(self):
        results, output = cells("a = 1", "1 / 0", "a", "def f(:", "raise SystemExit(3)")
        error = results[1]["error"]
        self.assertEqual((results[1]["status"], error["type"], error["message"]),
                         ("error", "ZeroDivisionError", "division by zero"))
        self.assertIn("ZeroDivisionError", error["traceback"])
        self.assertEqual(results[2]["result"], "1")
        self.assertEqual([r["error"]["type"] for r in results[3:]], ["SyntaxError", "SystemExit"])
        self.assertNotIn("Traceback", output, "tracebacks are the answer's, not the output's")

    def test_output_keeps_the_order_of_both_streams_and_of_programs(self):
        _, output = cells("import sys\nprint('a')\nsys.stderr.write('b\\n')\n!echo c\nprint('d')")
        self.assertEqual(output, "a\nb\nc\nd\n")

    def test_an_image_that_is_not_png_data_is_dropped_with_a_reason(self):
        results, _ = cells("from IPython.display import display\n"
                           "display({'image/png': ['x']}, raw=True)")
        self.assertEqual((results[0]["status"], results[0]["figures"]), ("ok", 0))
        self.assertIn("not PNG", results[0]["figure_error"])

    def test_package_installs_are_refused_with_a_reason(self):
        results, output = cells("!pip install numpy", "%pip install numpy", "!pip --version")
        self.assertEqual(output.count("read-only"), 2, output)
        self.assertEqual([r["status"] for r in results], ["ok"] * 3)

    def test_install_commands_are_recognised(self):
        for cmd in ("pip install x", "pip3 install -q x", "python -m pip install x",
                    "/usr/bin/python3 -m pip --quiet install x", "conda install x",
                    "apt-get install -y x", "cd /tmp && pip install x", "sudo apt install x"):
            self.assertIsNotNone(session.INSTALL_COMMAND.search(cmd), cmd)
        for cmd in ("pip list", "pip show numpy", "echo install", "ls pip_install.txt",
                    "python -m pipx list"):
            self.assertIsNone(session.INSTALL_COMMAND.search(cmd), cmd)

    def test_sigint_raises_only_inside_a_cell(self):
        def scenario(emit):
            # Sent while the shell starts (SIGINT blocked: it waits) or while the cell runs.
            threading.Timer(1.0, lambda: signal.pthread_kill(threading.main_thread().ident,
                                                             signal.SIGINT)).start()
            run_cells(["import time\nfor _ in range(200):\n    time.sleep(0.05)", "'after'"],
                      emit)

        events, _ = in_child(scenario)
        interrupted, after = [e for e in events if e["ev"] == "cell"]
        self.assertEqual(interrupted["error"]["type"], "KeyboardInterrupt")
        self.assertEqual(after["result"], "'after'")

    def test_figures_are_shown_inline_and_closed(self):
        results, output = cells(
            "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\nplt.show()\n"
            "plt.figure(); plt.bar([1], [2]);",
            "len(plt.get_fignums())")
        self.assertEqual(output, "")
        self.assertEqual((results[0]["status"], results[0]["figures"]), ("ok", 2))
        self.assertEqual(results[1]["result"], "0")


if __name__ == "__main__":
    unittest.main()
