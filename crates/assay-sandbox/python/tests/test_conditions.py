import json
import os
import subprocess
import sys
import tempfile
import unittest

from assay_worker import conditions

from helpers import in_child


def listings(conditions_spec, directory, emit):
    conditions.apply(conditions_spec)
    for name in ("b", "a", "c"):
        open(os.path.join(directory, name), "w").close()
    entries = os.scandir(directory)  # used without `with`, as some code does
    first = next(entries)
    entries.close()
    with os.scandir(directory) as found:
        scanned = [e.name for e in found]
    fd = os.open(directory, os.O_RDONLY)
    emit({"listdir": os.listdir(directory), "scandir": scanned,
          "first": first.name, "after_close": list(entries),
          "bytes": [n.decode() for n in os.listdir(os.fsencode(directory))],
          "fd": os.listdir(fd), "is_file": first.is_file(),
          "names": [os.listdir.__name__, os.scandir.__name__],
          "supports_fd": os.listdir in os.supports_fd and os.scandir in os.supports_fd})


class ConditionsTest(unittest.TestCase):
    def test_name_order_holds_for_every_form_of_listing(self):
        with tempfile.TemporaryDirectory() as directory:
            spec = {"listing": "name", "listing_key": 0, "seed": 0}
            [event, _stdout] = in_child(listings, spec, directory)[0]
        for way in ("listdir", "scandir", "bytes", "fd"):
            self.assertEqual(event[way], ["a", "b", "c"], way)
        self.assertEqual(event["first"], "a")
        self.assertEqual(event["after_close"], [], "a closed listing yields nothing more")
        self.assertTrue(event["is_file"], "entries keep working after the listing closed")
        self.assertEqual(event["names"], ["listdir", "scandir"])
        self.assertTrue(event["supports_fd"])

    def test_an_unknown_order_is_refused(self):
        with self.assertRaises(ValueError):
            conditions.apply({"listing": "random", "listing_key": 0, "seed": 0})

    def test_generators_imported_after_the_conditions_are_seeded_too(self):
        # A fresh interpreter: numpy and faker must not be imported before the conditions apply.
        script = (
            "import json, sys\n"
            "from assay_worker import conditions\n"
            "conditions.apply({'listing': 'kernel', 'listing_key': 0, 'seed': 3})\n"
            "preloaded = 'numpy' in sys.modules or 'faker' in sys.modules\n"
            "import numpy\n"
            "from faker import Faker\n"
            "drawn = [float(numpy.random.rand()), Faker().random_int(1, 10**9)]\n"
            "numpy.random.seed(3)\n"
            "Faker.seed(3)\n"
            "again = [float(numpy.random.rand()), Faker().random_int(1, 10**9)]\n"
            "print(json.dumps([preloaded, drawn == again]))\n"
        )
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": here}, timeout=60, check=True)
        self.assertEqual(json.loads(out.stdout), [False, True], out.stderr)
