import os
import unittest

from assay_worker import child, script_job, wire

from helpers import in_child


def script(code, **extra):
    events, _ = in_child(script_job.run, {"code": code, "argv": [], **extra})
    return {e["ev"]: e for e in events}


class ScriptJobTest(unittest.TestCase):
    def test_exit_codes_follow_python(self):
        self.assertEqual(script("print('hi')")["script_done"]["exit_code"], 0)
        self.assertEqual(script("import sys; sys.exit(4)")["script_done"]["exit_code"], 4)
        self.assertEqual(script("import sys; sys.exit()")["script_done"]["exit_code"], 0)
        self.assertEqual(script("import sys; sys.exit('bye')")["script_done"]["exit_code"], 1)
        done = script("raise ValueError('nope')")["script_done"]
        self.assertEqual((done["exit_code"], done["error"]["type"]), (1, "ValueError"))

    def test_argv_and_main(self):
        ev = script("import sys\nprint(__name__, sys.argv)", argv=["-x", "1"])
        self.assertEqual(ev["stdout"]["text"].strip(), "__main__ ['main.py', '-x', '1']")

    def test_threads_and_atexit_finish_before_the_report(self):
        code = ("import atexit, threading, time\n"
                "atexit.register(lambda: print('atexit'))\n"
                "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n")
        self.assertEqual(script(code)["stdout"]["text"].split(), ["thread", "atexit"])


class WireTest(unittest.TestCase):
    def test_frames_round_trip_and_survive_bad_text(self):
        r, w = os.pipe()
        wire.write_frame(w, {"op": "exec", "id": 1, "code": "caf\u00e9 \udcff", "cpu_seconds": 1})
        os.close(w)
        self.assertEqual(wire.read_frame(r)["code"], "caf\u00e9 ?")
        self.assertIsNone(wire.read_frame(r))

    def test_received_messages_carry_exactly_their_fields(self):
        r, w = os.pipe()
        wire.write_frame(w, {"op": "exec", "id": 1, "code": "1", "cpu_seconds": 2})
        wire.write_frame(w, {"op": "exec", "id": 1, "code": "1"})
        wire.write_frame(w, {"op": "exec", "id": 1, "code": "1", "cpu_seconds": 2, "x": 0})
        wire.write_frame(w, {"op": "victory"})
        os.close(w)
        self.assertEqual(wire.read_frame(r)["cpu_seconds"], 2)
        with self.assertRaisesRegex(ValueError, r"missing \['cpu_seconds'\]"):
            wire.read_frame(r)
        with self.assertRaisesRegex(ValueError, r"unknown \['x'\]"):
            wire.read_frame(r)
        with self.assertRaisesRegex(ValueError, "not a message the worker is sent"):
            wire.read_frame(r)

    def test_input_paths_must_stay_inside(self):
        self.assertEqual(child._safe_relative("data/in.csv"), "data/in.csv")
        for bad in ("/etc/passwd", "../x", "a/../../x", "", "a//b"):
            with self.assertRaises(ValueError):
                child._safe_relative(bad)


if __name__ == "__main__":
    unittest.main()
