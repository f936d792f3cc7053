"""The official process guards, one behaviour at a time.

Each probe runs in a forked child (the guards replace os and subprocess functions for good),
gets the real ``os.kill`` to clean up with, and returns what it saw; what the guards printed
comes back as the child's stdout.
"""

import json
import os
import signal
import subprocess
import sys
import time
import unittest

from assay_worker import official_guards, unittest_job

from helpers import in_child

# Above the kernel's PID_MAX_LIMIT (2**22): never a live process.
NO_SUCH_PID = 2**22 + 1


def _probe_in_child(probe, source, emit):
    real_kill = os.kill
    try:
        official_guards.install(source)
        emit({"ev": "result", "value": probe(real_kill)})
    finally:
        sys.stdout.flush()
        _stop_managers(real_kill)


def _stop_managers(real_kill):
    """The registry's manager servers would outlive the child otherwise."""
    import multiprocessing

    for process in multiprocessing.active_children():
        real_kill(process.pid, signal.SIGKILL)


def _job_then_clean_up(spec, emit):
    real_kill = os.kill
    try:
        unittest_job.run({"test_class": "TestCases", "guards": False, **spec}, emit)
    finally:
        _stop_managers(real_kill)


def guarded(probe, source=""):
    """Runs ``probe(real_kill)`` under the guards installed for code ``source``; returns what
    it returned (JSON-able) and what was printed."""
    events, _ = in_child(_probe_in_child, probe, source)
    crashes = [e["traceback"] for e in events if e["ev"] == "crash"]
    if crashes:
        raise AssertionError(crashes[0])
    [result] = [e["value"] for e in events if e["ev"] == "result"]
    [stdout] = [e["text"] for e in events if e["ev"] == "stdout"]
    return result, stdout


def sleeper(new_group=False):
    """A forked process that is not a Popen child of the job."""
    pid = os.fork()
    if pid == 0:
        if new_group:
            os.setpgid(0, 0)
        time.sleep(30)
        os._exit(0)
    if new_group:
        time.sleep(0.1)  # its setpgid
    return pid


def alive(pid):
    """Whether ``pid``, a child of this process, still runs; reaps it if not."""
    return os.waitpid(pid, os.WNOHANG) == (0, 0)


def finish(real_kill, process):
    """Kills and reaps ``process``: a forked pid, or a Popen."""
    if isinstance(process, int):
        real_kill(process, signal.SIGKILL)
        os.waitpid(process, 0)
    else:
        real_kill(process.pid, signal.SIGKILL)
        process.wait()


class SignalsTest(unittest.TestCase):
    def test_a_process_the_job_did_not_spawn_is_left_alone_with_a_message(self):
        def probe(real_kill):
            victim = sleeper()
            answer = os.kill(victim, signal.SIGKILL)
            time.sleep(0.1)
            seen = [answer, alive(victim), victim]
            finish(real_kill, victim)
            return seen

        (answer, still_alive, victim), out = guarded(probe)
        self.assertEqual((answer, still_alive), (None, True))
        self.assertIn(f"Prevented attempt to kill PID {victim} with signal 9\n", out)

    def test_a_pid_that_does_not_exist_is_ignored_quietly(self):
        def probe(real_kill):
            return [os.kill(NO_SUCH_PID, signal.SIGTERM), os.kill(-NO_SUCH_PID, 0)]

        self.assertEqual(guarded(probe), ([None, None], ""))

    def test_the_job_may_signal_itself(self):
        def probe(real_kill):
            got = []
            signal.signal(signal.SIGUSR1, lambda signum, frame: got.append(signum))
            os.kill(os.getpid(), signal.SIGUSR1)
            return got

        self.assertEqual(guarded(probe), ([signal.SIGUSR1], ""))

    def test_a_process_the_job_forks_may_not_signal_itself_but_may_signal_the_job(self):
        def probe(real_kill):
            job = os.getpid()
            pid = os.fork()
            if pid == 0:
                os.kill(os.getpid(), signal.SIGKILL)  # refused: not the job, not a Popen child
                os.kill(job, 0)
                sys.stdout.flush()
                os._exit(7)
            return [pid, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])]

        (pid, code), out = guarded(probe)
        self.assertEqual(code, 7)
        self.assertEqual(out, f"Prevented attempt to kill PID {pid} with signal 9\n")

    def test_popen_children_may_be_signalled(self):
        def probe(real_kill):
            child = subprocess.Popen(["sleep", "30"])
            os.kill(child.pid, signal.SIGKILL)
            return child.wait(timeout=5)

        self.assertEqual(guarded(probe)[0], -signal.SIGKILL)

    def test_killpg_reaches_the_jobs_group_and_its_childrens_groups_only(self):
        def probe(real_kill):
            os.killpg(os.getpgid(0), 0)
            stranger = sleeper(new_group=True)
            os.killpg(stranger, signal.SIGKILL)
            time.sleep(0.1)
            spared = alive(stranger)
            finish(real_kill, stranger)
            child = subprocess.Popen(["sleep", "30"])
            os.killpg(child.pid, signal.SIGKILL)  # its own session, so its own group
            return [stranger, spared, child.wait(timeout=5)]

        (stranger, spared, code), out = guarded(probe)
        self.assertEqual((spared, code), (True, -signal.SIGKILL))
        self.assertEqual(out.count("Prevented"), 1, out)
        self.assertIn(f"Prevented attempt to kill PGID {stranger} with signal 9\n", out)

    def test_killpg_fails_once_a_recorded_child_is_gone(self):
        # The children's groups are looked up for any group but the job's own: a child
        # already reaped makes that lookup fail, officially too.
        def probe(real_kill):
            subprocess.Popen(["true"]).wait()
            os.killpg(os.getpgid(0), 0)  # the job's own group: no lookup
            try:
                os.killpg(NO_SUCH_PID, signal.SIGTERM)
            except ProcessLookupError:
                return "ProcessLookupError"
            return "no error"

        self.assertEqual(guarded(probe)[0], "ProcessLookupError")


class PopenTest(unittest.TestCase):
    def test_each_child_gets_its_own_session_and_is_announced(self):
        def probe(real_kill):
            child = subprocess.Popen(["sleep", "30"])
            seen = [os.getsid(child.pid) == child.pid, os.getpgid(child.pid) == child.pid]
            finish(real_kill, child)
            return seen

        self.assertEqual(guarded(probe),
                         ([True, True], "Intercepted Popen command: (['sleep', '30'],)\n"))

    def test_the_callers_preexec_fn_is_replaced_and_a_second_session_refused(self):
        def probe(real_kill):
            replaced = subprocess.Popen(["true"], preexec_fn=lambda: os._exit(3)).wait()
            try:
                subprocess.Popen(["sleep", "30"], start_new_session=True)
                refused = False
            except subprocess.SubprocessError:
                refused = True
            return [replaced, refused]

        self.assertEqual(guarded(probe)[0], [0, True])

    def test_kill_and_terminate_send_sigterm(self):
        def probe(real_kill):
            codes = []
            for verb in ("kill", "terminate"):
                child = subprocess.Popen(["sleep", "30"])
                codes.append([verb, child.pid, getattr(child, verb)(), child.wait(timeout=5)])
            finished = subprocess.Popen(["true"])
            finished.wait()
            finished.kill()  # reaped already: quietly nothing
            return codes

        codes, out = guarded(probe)
        for verb, pid, answer, code in codes:
            self.assertEqual((answer, code), (None, -signal.SIGTERM))
            self.assertIn(f"Intercepted {verb} call for PID {pid}\n", out)
        self.assertNotIn("Prevented", out)

    def test_a_communicate_timeout_is_swallowed_but_not_a_wait_timeout(self):
        def probe(real_kill):
            child = subprocess.Popen(["sleep", "30"], stdout=subprocess.PIPE)
            answer = child.communicate(timeout=0.1)
            try:
                child.wait(timeout=0.1)
                waited = "returned"
            except subprocess.TimeoutExpired:
                waited = "TimeoutExpired"
            finish(real_kill, child)
            # run() relies on communicate() raising: it waits for the child instead, and
            # answers a returncode of None.
            started = time.monotonic()
            ran = subprocess.run(["sleep", "0.5"], timeout=0.1)
            return [list(answer), waited, ran.returncode, time.monotonic() - started >= 0.5]

        result, out = guarded(probe)
        self.assertEqual(result, [[None, None], "TimeoutExpired", None, True])
        self.assertEqual(out.count("Timeout expired, intercepted and returning None\n"), 2)


class CommandsTest(unittest.TestCase):
    def test_commands_that_mention_kill_are_skipped_and_answered_as_successes(self):
        def probe(real_kill):
            victim = sleeper()
            ran = subprocess.run(["kill", "-9", str(victim)])
            with os.popen(f"pkill -P {os.getpid()}") as popen:
                popen_out = popen.read()
            seen = [
                os.system(f"kill -9 {victim}"),
                subprocess.call(["killall", "sleep"]),
                subprocess.call(f"echo skill {victim}", shell=True),
                [list(ran.args[0]), ran.returncode, ran.stdout.decode(), ran.stderr.decode()],
                len(ran.args),
                popen_out,
            ]
            time.sleep(0.1)
            seen.append(alive(victim))
            finish(real_kill, victim)
            return seen

        result, out = guarded(probe)
        self.assertEqual(result[:3], [0, 0, 0])
        self.assertEqual(result[3][1:], [0, "", ""])
        self.assertEqual(result[4:], [1, "Intercepted\n", True])
        victim = result[3][0][2]
        for line in (
            f"Intercepted subprocess run command: (['kill', '-9', '{victim}'],)",
            f"Intercepted system command: kill -9 {victim}",
            "Intercepted subprocess call: ['killall', 'sleep']",
            f"Intercepted subprocess call: echo skill {victim}",
            "Intercepted os.popen command: pkill -P",
            # os.popen's substitute goes through the guards again, as officially.
            "Intercepted os.popen command: echo Intercepted\n"
            "Intercepted Popen command: ('echo Intercepted',)\n",
        ):
            self.assertIn(line, out)
        self.assertNotIn("Intercepted Popen command: (['kill'", out)

    def test_an_argument_list_mentions_a_word_only_as_a_whole_item(self):
        def probe(real_kill):
            return [subprocess.call(["sh", "-c", "exit 5; kill"]),
                    subprocess.call(["sh", "-c", "exit 6", "killall"]),
                    subprocess.call(["sh", "-c", "exit 7", "kill"])]

        self.assertEqual(guarded(probe)[0], [5, 0, 0])

    def test_other_commands_run_announced(self):
        def probe(real_kill):
            with os.popen("echo popen") as popen:
                popen_out = popen.read()
            return [
                os.waitstatus_to_exitcode(os.system("exit 3")),
                subprocess.call(["sh", "-c", "exit 4"]),
                subprocess.run(["echo", "run"], capture_output=True).stdout.decode(),
                subprocess.check_output(["echo", "out"]).decode(),
                popen_out,
            ]

        result, out = guarded(probe)
        self.assertEqual(result, [3, 4, "run\n", "out\n", "popen\n"])
        for line in ("Intercepted system command: exit 3\n",
                     "Intercepted subprocess call: ['sh', '-c', 'exit 4']\n",
                     "Intercepted subprocess run command: (['echo', 'run'],)\n",
                     "Intercepted command: ['echo', 'out']\n",
                     "Intercepted os.popen command: echo popen\n"):
            self.assertIn(line, out)

    def test_check_output_answers_nothing_to_commands_that_mention_ps(self):
        def probe(real_kill):
            answers = [subprocess.check_output(["ps"]),
                       subprocess.check_output("ps aux", shell=True),
                       subprocess.check_output("echo oops", shell=True),
                       subprocess.check_output(["ps"], text=True)]
            return [repr(a) for a in answers] + [subprocess.check_output(["echo", "ps-free"])
                                                 .decode()]

        result, out = guarded(probe)
        self.assertEqual(result, ["b''"] * 4 + ["ps-free\n"])
        self.assertIn("Intercepted command: ['ps']\n", out)
        self.assertIn("Intercepted command: ps aux\n", out)
        self.assertNotIn("Intercepted Popen command: (['ps']", out)

    def test_exec_does_nothing(self):
        def probe(real_kill):
            return [os.execv("/bin/false", ["false"]), os.execvp("false", ["false"]),
                    os.execvpe("false", ["false"], {}), os.execl("/bin/false", "false")]

        result, out = guarded(probe)
        self.assertEqual(result, [None] * 4)
        self.assertEqual(out, "Intercepted exec command: ('/bin/false', ['false'])\n"
                              "Intercepted exec command: ('false', ['false'])\n"
                              "Intercepted exec command: ('false', ['false'], {})\n"
                              "Intercepted exec command: ('/bin/false', ('false',))\n")


class RegistryTest(unittest.TestCase):
    def test_the_managers_start_up_front_only_for_code_that_may_use_multiprocessing(self):
        def probe(real_kill):
            import multiprocessing

            before = len(multiprocessing.active_children())
            child = subprocess.Popen(["true"])
            child.wait()
            return [before, len(multiprocessing.active_children())]

        self.assertEqual(guarded(probe)[0], [0, 2])
        self.assertEqual(guarded(probe, "from multiprocessing import Pool")[0], [2, 2])
        self.assertEqual(guarded(probe, "ProcessPoolExecutor")[0], [2, 2])

    def test_children_spawned_in_a_forked_process_are_the_jobs_too(self):
        def probe(real_kill):
            read_end, write_end = os.pipe()
            worker = os.fork()
            if worker == 0:
                child = subprocess.Popen(["sleep", "30"])
                os.write(write_end, str(child.pid).encode())
                os._exit(0)
            os.close(write_end)
            pid = int(os.read(read_end, 100))
            os.waitpid(worker, 0)
            os.kill(pid, signal.SIGKILL)  # an orphan now, but recorded
            time.sleep(0.2)
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    state = stat.read().rsplit(")", 1)[1].split()[0]
                real_kill(pid, signal.SIGKILL)
            except (FileNotFoundError, ProcessLookupError):
                state = "reaped"
            return state

        state, out = guarded(probe, "import multiprocessing")
        self.assertIn(state, ("Z", "reaped"))
        self.assertNotIn("Prevented", out)


class InUnittestJobTest(unittest.TestCase):
    CODE = """
import os, signal, subprocess
def task_func():
    child = subprocess.Popen(["echo", "piped"])
    own_session = os.getsid(child.pid) == child.pid
    return [child.communicate(), own_session, os.kill(1 << 22 | 1, 0)]
"""
    TEST = """
import unittest
class TestCases(unittest.TestCase):
    def test_it(self):
        self.assertEqual(task_func(), [(b"piped\\n", b""), True, None])
"""

    def test_the_guards_go_under_the_official_output_pipes_and_print_to_the_capture(self):
        events, _ = in_child(_job_then_clean_up, {"code": self.CODE, "test": self.TEST,
                                                  "guards": True})
        outcomes = [e["outcome"] for e in events if e["ev"] == "test"]
        self.assertEqual(outcomes, ["pass"], json.dumps(events))
        [stdout] = [e["text"] for e in events if e["ev"] == "stdout"]
        self.assertIn("Intercepted Popen command: (['echo', 'piped'],)", stdout)

    def test_without_guards_the_calls_are_the_real_ones(self):
        events, _ = in_child(_job_then_clean_up, {"code": self.CODE, "test": self.TEST})
        outcomes = [e["outcome"] for e in events if e["ev"] == "test"]
        self.assertEqual(outcomes, ["error"], json.dumps(events))
        [stdout] = [e["text"] for e in events if e["ev"] == "stdout"]
        self.assertNotIn("Intercepted", stdout)


if __name__ == "__main__":
    unittest.main()
