import os
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
          "names": [os.listdir.__name__, os.scandir.__name__]})


class ConditionsTest(unittest.TestCase):
    def test_name_order_holds_for_every_form_of_listing(self):
        with tempfile.TemporaryDirectory() as directory:
            [event, _stdout] = in_child(listings, {"listing": "name"}, directory)[0]
        for way in ("listdir", "scandir", "bytes", "fd"):
            self.assertEqual(event[way], ["a", "b", "c"], way)
        self.assertEqual(event["first"], "a")
        self.assertEqual(event["after_close"], [], "a closed listing yields nothing more")
        self.assertTrue(event["is_file"], "entries keep working after the listing closed")
        self.assertEqual(event["names"], ["listdir", "scandir"])

    def test_an_unknown_order_is_refused(self):
        with self.assertRaises(ValueError):
            conditions.apply({"listing": "random"})
