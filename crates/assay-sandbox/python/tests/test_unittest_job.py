import types
import unittest

from assay_worker import unittest_job

from helpers import in_child

PASSING = "def task_func(x):\n    return 2 * x\n"
TESTS = """
import unittest

class TestCases(unittest.TestCase):
    def test_b_double(self):
        self.assertEqual(task_func(2), 4)

    def test_a_zero(self):
        self.assertEqual(task_func(0), 0)
"""


def found(final):
    """What a final frame's integrity findings name."""
    return [f["what"] for f in final["integrity"]]


def run(code, test=TESTS, **extra):
    spec = {"code": code, "test": test, "test_class": "TestCases", "guards": False, **extra}
    events, _ = in_child(unittest_job.run, spec)
    by_kind = {}
    for event in events:
        by_kind.setdefault(event["ev"], []).append(event)
    return by_kind


class UnittestJobTest(unittest.TestCase):
    def test_passing_code_reports_every_test_in_name_order(self):
        ev = run(PASSING)
        self.assertEqual(ev["loaded"][0]["tests"], ["test_a_zero", "test_b_double"])
        self.assertEqual([t["outcome"] for t in ev["test"]], ["pass", "pass"])
        done = ev["tests_done"][0]
        self.assertEqual(done["tests_run"], 2)
        self.assertEqual((done["failures"], done["errors"], done["integrity"]), ([], [], []))
        self.assertEqual([b["name"] for b in ev["body_done"]], ["test_a_zero", "test_b_double"])
        self.assertEqual([t["ended"] for t in ev["test"]], [None, None])

    def test_a_skip_reason_of_any_type_is_reported_as_text(self):
        test = TESTS.replace("    def test_a_zero(self):",
                             "    @unittest.skip(['not', 'a', 'string'])\n"
                             "    def test_a_zero(self):")
        [skipped] = [t for t in run(PASSING, test)["test"] if t["name"] == "test_a_zero"]
        self.assertEqual((skipped["outcome"], skipped["detail"]),
                         ("skip", "['not', 'a', 'string']"))

    def test_a_failure_carries_unittests_own_traceback(self):
        done = run("def task_func(x):\n    return 3 * x\n")["tests_done"][0]
        [(key, trace)] = done["failures"]
        self.assertEqual(key, "test_b_double")
        self.assertIn('File "__test__.py"', trace)
        self.assertIn("AssertionError: 6 != 4", trace)

    def test_module_errors_stop_before_the_tests(self):
        ev = run("import not_a_module_anywhere\n")
        self.assertNotIn("tests_done", ev)
        done = ev["module_error"][0]
        self.assertEqual(done["error"]["type"], "ModuleNotFoundError")
        self.assertNotIn("unittest_job.py", done["error"]["traceback"])
        self.assertEqual(run("def broken(:\n")["module_error"][0]["error"]["type"], "SyntaxError")
        exit_at_import = run("import sys\nsys.exit(0)\n")["module_error"][0]
        self.assertEqual(exit_at_import["error"]["type"], "SystemExit")

    def test_the_official_module_environment(self):
        probe = PASSING + """
import io, subprocess, tempfile
assert __name__ == "__test__" and __file__ == "__test__.py"
assert environ is os.environ and sys.modules["os"] is os
assert exit is None and quit is None
assert os.environ["TZ"] == "UTC"
try:
    input()
    raise AssertionError("input() must fail")
except OSError:
    pass
assert subprocess.run(["echo", "hi"]).stdout == b"hi\\n"
assert subprocess.run(["echo", "hi"], capture_output=True).stdout == b"hi\\n"
print("swallowed")
"""
        ev = run(probe)
        self.assertIn("tests_done", ev, ev.get("module_error"))
        self.assertIn("swallowed", ev["stdout"][0]["text"])

    def test_official_keys_for_subtests_and_class_fixtures(self):
        subtests = """
import unittest
class TestCases(unittest.TestCase):
    def test_many(self):
        for i in range(3):
            with self.subTest(i=i):
                self.assertLess(i, 2)
"""
        done = run(PASSING, subtests)["tests_done"][0]
        self.assertEqual([k for k, _ in done["failures"]], ["test_many (i=2)"])
        fixture = """
import unittest
class TestCases(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        raise RuntimeError("no fixture")
    def test_never(self):
        pass
"""
        ev = run(PASSING, fixture)
        self.assertEqual([k for k, _ in ev["tests_done"][0]["errors"]], ["TestCases)"])
        self.assertEqual(ev["fixture"][0]["outcome"], "error")

    def test_skips_and_expected_failures_count_as_passes(self):
        tests = """
import unittest
class TestCases(unittest.TestCase):
    @unittest.skip("not today")
    def test_skipped(self):
        self.fail()
    @unittest.expectedFailure
    def test_known_bad(self):
        self.assertEqual(1, 2)
"""
        ev = run(PASSING, tests)
        self.assertEqual([t["outcome"] for t in ev["test"]], ["xfail", "skip"])
        self.assertEqual((ev["tests_done"][0]["failures"], ev["tests_done"][0]["errors"]), ([], []))

    def test_patching_unittest_is_reported(self):
        cheat = PASSING + (
            "import unittest\n"
            "unittest.TestCase.assertEqual = lambda self, *a, **k: None\n"
        )
        done = run("def task_func(x):\n    return 0\n" + cheat.split(PASSING)[1])["tests_done"][0]
        self.assertIn("TestCase.assertEqual", found(done))
        added = "import unittest\nunittest.TestCase.__getattribute__ = object.__getattribute__\n"
        self.assertTrue(any("added" in t for t in found(run(PASSING + added)["tests_done"][0])))
        swap = "import sys, types\nsys.modules['unittest'] = types.ModuleType('unittest')\n"
        # The emptied module fails the test source's own import: a module error, still reported.
        self.assertIn("sys.modules['unittest']", found(run(PASSING + swap)["module_error"][0]))

    def test_tampering_from_inside_a_test_is_caught(self):
        code = (
            "def task_func(x):\n"
            "    import sys\n"
            "    sys.modules['__test__'].TestCases.test_b_double = lambda self: None\n"
            "    return 0\n"
        )
        ev = run(code)
        self.assertTrue(any("test_b_double" in t for t in found(ev["tests_done"][0])),
                        ev["tests_done"][0]["integrity"])
        # test_a_zero's own body ran to its end; test_b_double's did too (the class attribute
        # was replaced after unittest bound the method), test_a_zero's run replaced nothing.
        self.assertIn("test_a_zero", [b["name"] for b in ev["body_done"]])

    def test_a_body_ended_by_the_answer_sends_no_body_done_and_says_how(self):
        code = "import unittest\ndef task_func(x):\n    raise unittest.SkipTest('no')\n"
        ev = run(code)
        self.assertNotIn("body_done", ev)
        self.assertEqual([t["outcome"] for t in ev["test"]], ["skip", "skip"])
        self.assertEqual(ev["test"][0]["ended"], {"type": "SkipTest", "raised_in": "task_func"})

    def test_rewriting_the_audit_hook_is_seen_by_it(self):
        # The hook, found among the collector's objects, has what it needs as defaults: an
        # answer that swaps them for a watched set without events, then rewrites an
        # assertion in place, is seen doing the first.
        code = (
            "import gc, types, unittest\n"
            "for f in gc.get_objects():\n"
            "    if isinstance(f, types.FunctionType) and f.__name__ == 'hook' and f.__defaults__:\n"
            "        f.__defaults__ = (frozenset(), f.__defaults__[1])\n"
            "unittest.TestCase.assertEqual.__code__ = (lambda *a, **k: None).__code__\n"
            "def task_func(x):\n    return 0\n")
        ev = run(code)
        self.assertEqual([t["outcome"] for t in ev["test"]], ["pass", "pass"])
        what = found(ev["tests_done"][0])
        self.assertIn("Witness.hook.<locals>.hook.__defaults__ rewritten", what)

    def test_the_witness_refuses_a_call_from_other_code(self):
        code = "def task_func(x):\n    __assay_done__()\n    return 2 * x\n"
        ev = run(code)
        self.assertEqual([b["name"] for b in ev["body_done"]], ["test_a_zero", "test_b_double"])
        kinds = {f["kind"] for f in ev["tests_done"][0]["integrity"]}
        self.assertEqual(kinds, {"forged"})

    def test_tracebacks_and_line_numbers_are_the_official_ones(self):
        code = "def task_func(x):\n    return 3 * x\n"
        done = run(code)["tests_done"][0]
        # ``code + "\n" + test``: the answer's 2 lines, the joining newline, then the test's
        # own lines (the assertion of test_b_double is its 6th).
        self.assertIn('File "__test__.py", line 9, in test_b_double', done["failures"][0][1])
        # Byte for byte what plain unittest gives for the official ``code + "\n" + test``,
        # raising from the answer and from inside a subtest too.
        subtests = TESTS + (
            "\n    def test_c_sub(self):\n        for x in (1, 2):\n"
            "            with self.subTest(x=x):\n                self.assertEqual(task_func(x), 2 * x)\n")
        for answer in (code, "def task_func(x):\n    return {}[x]\n"):
            done = run(answer, subtests)["tests_done"][0]
            module = types.ModuleType("__test__")
            exec(compile(answer + "\n" + subtests, "__test__.py", "exec"), module.__dict__)
            official = unittest.TestResult()
            unittest.TestLoader().loadTestsFromTestCase(module.TestCases).run(official)
            self.assertEqual([t for _, t in done["failures"]],
                             [t for _, t in official.failures])
            self.assertEqual([t for _, t in done["errors"]], [t for _, t in official.errors])
            self.assertTrue(done["failures"] or done["errors"])

    def test_an_equality_the_expected_value_does_not_share_is_found(self):
        code = ("class Anything:\n    def __eq__(self, other):\n        return True\n"
                "def task_func(x):\n    return Anything()\n")
        ev = run(code)
        self.assertEqual([t["outcome"] for t in ev["test"]], ["pass", "pass"])
        kinds = [f["kind"] for f in ev["tests_done"][0]["integrity"]]
        self.assertEqual(kinds, ["equality", "equality"])
        honest = ("class Doubled(int):\n    def __eq__(self, other):\n"
                  "        return int(self) == other\n    __hash__ = int.__hash__\n"
                  "def task_func(x):\n    return Doubled(2 * x)\n")
        self.assertEqual(run(honest)["tests_done"][0]["integrity"], [])

    def test_an_escaping_keyboard_interrupt_aborts_the_run(self):
        code = "def task_func(x):\n    raise KeyboardInterrupt\n"
        done = run(code)["tests_done"][0]
        self.assertEqual(done["aborted"]["type"], "KeyboardInterrupt")

    def test_long_tracebacks_are_capped(self):
        text = unittest_job.cap("x" * 200_000, 1000)
        self.assertLess(len(text), 1100)
        self.assertIn("characters cut", text)
        self.assertTrue(text.startswith("x") and text.endswith("x"))


if __name__ == "__main__":
    unittest.main()
