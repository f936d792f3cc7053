"""assay_code.Client against a real `assay serve` (standard library unittest).

One server, started by Client.start(jobs=2) with a secret, serves every test but the ones about
starting and the queue. The binary is $ASSAY_BIN, else the one installed with assay_code; a first
start sets up the Python environment (minutes). The answers are written here by hand (nothing
is read from a checkout or a shared data folder), for BigCodeBench/19: zip a folder's files.

    ASSAY_BIN=target/release/assay python3 -m unittest discover -s python/tests -v
"""

import os
import sys
import threading
import time
import unittest
import uuid

try:
    import assay_code
except ImportError:
    # Not installed (a checkout): the package beside this folder. An installed one (the wheel,
    # as .ci/install checks it) comes first.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import assay_code  # noqa: F401

from assay_code import AssayError, Client, Session, StartError, find_assay_bin

TASK = "BigCodeBench/19"

# A correct answer, written here rather than copied from the reference.
GOOD = '''import glob
import os
import zipfile


def task_func(directory):
    if not os.path.isdir(directory):
        raise FileNotFoundError(directory)
    paths = sorted(p for p in glob.glob(os.path.join(directory, "*")) if os.path.isfile(p))
    if not paths:
        return None
    target = os.path.join(directory, "files.zip")
    with zipfile.ZipFile(target, "w") as archive:
        for path in paths:
            archive.write(path, arcname=os.path.basename(path))
    return target
'''

# The same body continuing the task's Complete prompt (which ends inside task_func, after its
# docstring).
GOOD_BODY = '''    if not os.path.isdir(directory):
        raise FileNotFoundError(directory)
    paths = sorted(p for p in glob.glob(os.path.join(directory, "*")) if os.path.isfile(p))
    if not paths:
        return None
    target = os.path.join(directory, "files.zip")
    with zipfile.ZipFile(target, "w") as archive:
        for path in paths:
            archive.write(path, arcname=os.path.basename(path))
    return target
'''

# Wrong in one way only: an empty folder gets an (empty) archive instead of None, so exactly one
# of the task's tests fails.
WRONG = GOOD.replace("    if not paths:\n        return None\n", "")
WRONG_TESTS = {"test_empty_directory"}

# Raw model text, as `answer` takes it: reasoning, prose and a fenced block.
CHATTY = (
    "<think>glob the folder, keep the files, zip them.</think>\n"
    "Here is the function:\n\n```python\n" + GOOD + "```\n\nIt returns None for an empty folder."
)

SECRET = "s-" + uuid.uuid4().hex

SERVER = None  # the Client every test shares


def assay_bin():
    return os.environ.get("ASSAY_BIN") or find_assay_bin()


def setUpModule():
    global SERVER
    # 900 s: a first start sets up the Python environments. Sessions run in IPython, which the
    # bigcodebench environment lacks: the small `test` one has it, and matplotlib.
    SERVER = Client.start(jobs=2, assay_bin=assay_bin(), token=SECRET, timeout=900,
                          extra_args=["--sessions-profile", "test"])


def tearDownModule():
    if SERVER is not None:
        SERVER.close()


def admitted(queue):
    """Places taken: the implementation says `admitted`, the spec's draft waiting + running."""
    if "admitted" in queue:
        return queue["admitted"]
    return queue.get("waiting", 0) + queue.get("running", 0)


def failing(result):
    return {t.name for t in result.tests if t.result != "pass"}


class Service(unittest.TestCase):
    def test_health(self):
        health = SERVER.health()
        self.assertEqual(health["status"], "ok")
        self.assertEqual(health["jobs"], 2)
        self.assertIn("queue", health)
        self.assertIn("sessions", health)
        self.assertTrue(health["version"])

    def test_metrics(self):
        SERVER.health()
        text = SERVER.metrics()
        self.assertIn("assay_requests_total", text)
        self.assertIn("assay_queue_waiting", text)

    def test_wrong_secret_is_401(self):
        for token in ("wrong", ""):
            with self.subTest(token=token):
                with self.assertRaises(AssayError) as caught:
                    Client(SERVER.base_url, token=token, retries=0).health()
                self.assertEqual(caught.exception.status, 401)
                self.assertTrue(caught.exception.message)

    def test_secret_as_path_prefix(self):
        # NeMo Gym and SandboxFusion clients send no header: the secret is the path's first part.
        client = Client(SERVER.base_url + SECRET + "/", token="")
        self.assertEqual(client.health()["status"], "ok")


class Verify(unittest.TestCase):
    def test_solution_passes(self):
        result = SERVER.verify(TASK, solution=GOOD, id="good")
        self.assertEqual(result.status, "pass", result)
        self.assertTrue(result.passed)
        self.assertEqual(result.id, "good")
        self.assertEqual(result.task_id, TASK)
        self.assertIsNone(result.error)
        self.assertIn("def task_func", result.solution)
        self.assertGreaterEqual(len(result.tests), 6, result.tests)
        self.assertEqual(failing(result), set())
        self.assertIsNotNone(result.time_limit_seconds)
        self.assertIsNotNone(result.wall_seconds)
        self.assertIn("status", result.raw)

    def test_wrong_solution_fails_test_by_test(self):
        result = SERVER.verify(TASK, solution=WRONG)
        self.assertEqual(result.status, "fail", result)
        self.assertFalse(result.passed)
        self.assertEqual(failing(result), WRONG_TESTS, result.tests)
        self.assertTrue(any(t.result == "pass" for t in result.tests))

    def test_raw_answer_is_sanitized(self):
        result = SERVER.verify(TASK, answer=CHATTY)
        self.assertEqual(result.status, "pass", result)
        self.assertNotIn("<think>", result.solution)
        self.assertNotIn("```", result.solution)

    def test_completion_continues_the_prompt(self):
        result = SERVER.verify(TASK, completion=GOOD_BODY, split="complete")
        self.assertEqual(result.status, "pass", result)
        self.assertIn("Zips all files", result.solution)  # the prompt's docstring, prepended

    def test_unknown_task_is_404(self):
        with self.assertRaises(AssayError) as caught:
            SERVER.verify("BigCodeBench/999999", solution=GOOD)
        self.assertEqual(caught.exception.status, 404)

    def test_exactly_one_answer(self):
        with self.assertRaises(ValueError):
            SERVER.verify(TASK, solution=GOOD, answer=GOOD)
        with self.assertRaises(ValueError):
            SERVER.verify(TASK)

    def test_batch_streams_in_completion_order(self):
        # The slow item is first and sleeps at import (once per sample); with two jobs the
        # others are judged meanwhile, so they come back first, each with its id.
        slow = GOOD + "\nimport time\ntime.sleep(6)\n"
        items = [
            {"task_id": TASK, "solution": slow, "id": "slow"},
            (TASK, CHATTY),  # id: its index, 1
            {"task_id": TASK, "solution": WRONG, "id": {"kind": "wrong", "n": [1]}},
            {"task_id": "BigCodeBench/999999", "solution": GOOD, "id": "unknown"},
        ]
        started = time.monotonic()
        arrivals = []
        for result in SERVER.verify_batch(items):
            arrivals.append((time.monotonic() - started, result))
        got = {repr(r.id): r for _, r in arrivals}
        self.assertEqual(sorted(got), sorted(["'slow'", "1", repr({"kind": "wrong", "n": [1]}),
                                              "'unknown'"]), arrivals)
        self.assertEqual(arrivals[-1][1].id, "slow", [r.id for _, r in arrivals])
        self.assertEqual(got["'slow'"].status, "pass", got["'slow'"])
        self.assertEqual(got["1"].status, "pass", got["1"])
        self.assertEqual(got[repr({"kind": "wrong", "n": [1]})].status, "fail")
        self.assertEqual(failing(got[repr({"kind": "wrong", "n": [1]})]), WRONG_TESTS)
        unknown = got["'unknown'"]
        self.assertIsNotNone(unknown.error, unknown)
        self.assertIsNone(unknown.status)
        # Streamed, not buffered: the first verdict came well before the slow one.
        self.assertLess(arrivals[0][0], arrivals[-1][0] - 3, [t for t, _ in arrivals])

    def test_empty_batch(self):
        self.assertEqual(list(SERVER.verify_batch([])), [])


class Unittest(unittest.TestCase):
    CODE = "def add(a, b):\n    return a + b\n"
    TEST = (
        "import unittest\n"
        "class TestCases(unittest.TestCase):\n"
        "    def test_sum(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
        "    def test_data(self):\n"
        "        with open('data.txt') as f:\n"
        "            self.assertEqual(f.read(), 'forty-two')\n"
    )

    def test_pass_with_files(self):
        result = SERVER.unittest(self.CODE, self.TEST, files={"data.txt": "forty-two"},
                                 timeout=60, id=7)
        self.assertEqual(result.status, "pass", result)
        self.assertEqual(result.id, 7)
        self.assertEqual({t.name for t in result.tests}, {"test_sum", "test_data"})
        self.assertEqual(failing(result), set())

    def test_fail_names_the_test(self):
        result = SERVER.unittest("def add(a, b):\n    return a - b\n", self.TEST,
                                 files={"data.txt": b"forty-two"})
        self.assertEqual(result.status, "fail", result)
        self.assertEqual(failing(result), {"test_sum"})


class Run(unittest.TestCase):
    def test_stdin_files_fetch_files(self):
        code = (
            "import sys\n"
            "print(sys.stdin.read().upper(), end='')\n"
            "print(open('in/data.txt').read())\n"
            "open('out.bin', 'wb').write(bytes(range(256)))\n"
        )
        result = SERVER.run(code, stdin="abc\n", files={"in/data.txt": "payload"},
                            fetch_files=["out.bin"], timeout=30)
        self.assertEqual(result.status, "pass", result)
        self.assertEqual(result.exit_code, 0)
        self.assertEqual(result.stdout, "ABC\npayload\n")
        self.assertEqual(result.files, {"out.bin": bytes(range(256))})

    def test_argv(self):
        result = SERVER.run("import sys\nprint(sys.argv[1:])", argv=["a", "b c"])
        self.assertEqual(result.stdout.strip(), "['a', 'b c']", result)

    def test_exit_code_and_stderr(self):
        result = SERVER.run("import sys\nprint('oops', file=sys.stderr)\nsys.exit(3)")
        self.assertEqual(result.status, "error", result)
        self.assertEqual(result.exit_code, 3)
        self.assertIn("oops", result.stderr)

    def test_timeout(self):
        result = SERVER.run("import time\ntime.sleep(60)", timeout=2)
        self.assertEqual(result.status, "timeout", result)
        self.assertLess(result.wall_seconds, 30)


class Sessions(unittest.TestCase):
    def test_state_figures_files_and_delete(self):
        with SERVER.session(files={"input.csv": "a,b\n1,2\n"}) as session:
            listed = [s["session_id"] for s in SERVER.sessions()["sessions"]]
            self.assertIn(session.id, listed)

            first = session.execute("x = 41")
            self.assertEqual(first.status, "pass", first)
            second = session.execute("print(x + 1)")
            self.assertEqual(second.stdout, "42\n", second)
            self.assertIn("42", second.text)
            value = session.execute("x + 1")
            self.assertIn("42", str(value.result), value)

            failed = session.execute("1 / 0")
            self.assertIsNotNone(failed.error, failed)
            self.assertEqual(failed.error.name, "ZeroDivisionError")
            self.assertTrue(failed.session_alive)
            self.assertIn("ZeroDivisionError", failed.text)

            plot = session.execute(
                "import matplotlib\nimport matplotlib.pyplot as plt\n"
                "plt.plot([1, 2], [3, 1])\nplt.show()\n"
            )
            self.assertEqual(plot.error, None, plot)
            self.assertGreaterEqual(len(plot.figures), 1, plot)
            self.assertEqual(plot.figures[0].mime, "image/png")
            self.assertTrue(plot.figures[0].data.startswith(b"\x89PNG\r\n\x1a\n"))

            wrote = session.execute(
                "import csv\nrows = list(csv.reader(open('input.csv')))\n"
                "open('out.txt', 'w').write(str(len(rows)))\n"
            )
            self.assertIsNone(wrote.error, wrote)
            files = session.files()
            self.assertEqual(files.get("out.txt"), b"2", files)
            self.assertEqual(files.get("input.csv"), b"a,b\n1,2\n")
        self.assertTrue(session.closed)
        with self.assertRaises(AssayError) as caught:
            session.execute("x")
        self.assertEqual(caught.exception.status, 404)
        listed = [s["session_id"] for s in SERVER.sessions()["sessions"]]
        self.assertNotIn(session.id, listed)

    def test_own_session_id(self):
        wanted = "client-test-" + uuid.uuid4().hex
        with SERVER.session(session_id=wanted) as session:
            self.assertEqual(session.id, wanted)
            self.assertEqual(session.execute("print('hi')").stdout, "hi\n")

    def test_unknown_session_is_404(self):
        with self.assertRaises(AssayError) as caught:
            Session(SERVER, "no-such-session-" + uuid.uuid4().hex).execute("1")
        self.assertEqual(caught.exception.status, 404)


class Start(unittest.TestCase):
    def test_a_server_that_exits_says_why(self):
        started = time.monotonic()
        with self.assertRaises(StartError) as caught:
            Client.start(assay_bin=assay_bin(), extra_args=["--no-such-option"], timeout=120)
        self.assertIn("--no-such-option", str(caught.exception))
        self.assertLess(time.monotonic() - started, 60)

    def test_full_queue_is_503_then_retried(self):
        # One job, no lending, no queue: once every place (its capacity) holds a sleeping program,
        # another request is refused with 503 and Retry-After; a client that retries gets
        # through once they are done.
        with Client.start(jobs=1, assay_bin=assay_bin(), extra_args=["--max-jobs", "1", "--queue", "0"],
                          token=SECRET, timeout=300) as server:
            capacity = server.health()["queue"]["capacity"]
            self.assertGreaterEqual(capacity, 1)
            self.assertLessEqual(capacity, 8)
            busy = [
                threading.Thread(target=server.run, args=("import time\ntime.sleep(4)",),
                                 kwargs={"timeout": 30})
                for _ in range(capacity)
            ]
            for thread in busy:
                thread.start()
            try:
                deadline = time.monotonic() + 30
                while admitted(server.health()["queue"]) < capacity:
                    self.assertLess(time.monotonic(), deadline, server.health())
                    time.sleep(0.05)
                with self.assertRaises(AssayError) as caught:
                    Client(server.base_url, token=SECRET, retries=0).run("print(1)")
                self.assertEqual(caught.exception.status, 503)
                self.assertIsNotNone(caught.exception.retry_after)
                patient = Client(server.base_url, token=SECRET, retries=30, max_retry_wait=1)
                self.assertEqual(patient.run("print(1)").stdout, "1\n")
            finally:
                for thread in busy:
                    thread.join(60)


if __name__ == "__main__":
    unittest.main()
