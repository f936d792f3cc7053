import signal
import threading
import unittest

from assay_worker import session


def cells(*codes):
    state = session._State()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, session._raise_in_cell(KeyboardInterrupt, state))
    namespace = {"__name__": "__main__"}
    try:
        return [session.execute(code, namespace, state, f"<cell-{i}>")
                for i, code in enumerate(codes)], namespace
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class ExecuteTest(unittest.TestCase):
    def test_state_persists_and_the_last_expression_is_shown(self):
        results, ns = cells("x = 20", "x + 1", "y = x * 2", "None")
        self.assertEqual([r[:2] for r in results],
                         [("ok", None), ("ok", "21"), ("ok", None), ("ok", None)])
        self.assertEqual((ns["y"], ns["_"]), (40, 21))

    def test_errors_keep_the_state_and_start_in_the_cell(self):
        results, ns = cells("a = 1", "1 / 0", "a")
        status, _, error = results[1]
        self.assertEqual((status, error["ename"], error["evalue"]),
                         ("error", "ZeroDivisionError", "division by zero"))
        self.assertTrue(error["traceback"].startswith("Traceback"))
        self.assertIn('File "<cell-1>"', error["traceback"])
        self.assertNotIn("session.py", error["traceback"])
        self.assertEqual(results[2][:2], ("ok", "1"))

    def test_syntax_errors_and_exits_are_cell_errors(self):
        results, _ = cells("def f(:", "raise SystemExit(3)")
        self.assertEqual([r[2]["ename"] for r in results], ["SyntaxError", "SystemExit"])

    def test_sigint_raises_only_inside_a_cell(self):
        def interrupt_soon():
            threading.Timer(0.2, lambda: signal.pthread_kill(threading.main_thread().ident,
                                                               signal.SIGINT)).start()

        interrupt_soon()
        results, _ = cells("import time\nfor _ in range(100):\n    time.sleep(0.05)")
        self.assertEqual(results[0][2]["ename"], "KeyboardInterrupt")

    def test_open_figures_become_pngs_and_are_closed(self):
        results, _ = cells("import matplotlib\nmatplotlib.use('Agg')\n"
                           "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\n"
                           "plt.figure(); plt.bar([1], [2])")
        self.assertEqual(results[0][0], "ok")
        images, error = session._figures()
        self.assertIsNone(error)
        self.assertEqual(len(images), 2)
        import base64
        self.assertTrue(base64.b64decode(images[0]).startswith(b"\x89PNG"))
        self.assertEqual(session._figures(), ([], None))


if __name__ == "__main__":
    unittest.main()
