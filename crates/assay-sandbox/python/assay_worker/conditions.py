"""What a job's code ought not to depend on, fixed on purpose, so that a verdict does not depend on
the machine or the run, and changed on purpose by stability reruns to find the code that does.

* **Directory listing order.** The kernel lists a directory in an order of its own: tmpfs newest
  first, ext4 by a hash of each name seeded per filesystem (so the official image's order differs
  from machine to machine), XFS small directories in creation order. Code that lists without
  sorting and expects an order passes on one machine and fails on another. Here every Python
  listing (``os.listdir``, ``os.scandir`` and what is built on them: ``os.walk``, ``glob``,
  ``pathlib``, ``shutil``) comes in one of two orders chosen by the engine:

  - ``hashed``: by a keyed hash of each name, like ext4 but with a key that is the same on every
    machine (the default, key 0; a stability rerun uses another key);
  - ``name``: sorted by name;

  or, with ``kernel``, in the filesystem's own order (tmpfs: newest first). Programs the job
  starts (``find``, ``ls -U``) list in the kernel's order whatever is chosen.
* **Unseeded randomness.** ``random``, numpy's global generator and Faker's are seeded with
  the engine's seed in every job (a forked job would otherwise inherit numpy's state from the
  worker: every job of one worker drew the same "random" numbers, and another worker others);
  numpy and Faker when first imported, if the worker did not preload them. ``PYTHONHASHSEED``, which orders sets of
  strings, is set by the supervisor from the same seed, for the worker (whose hash secret every
  job inherits) and every program a job starts. Entropy from the kernel (``os.urandom``, ``secrets``, ``uuid4``,
  ``random.SystemRandom``) is left alone.
"""

import hashlib
import importlib.util
import os
import posix
import random
import sys


def apply(conditions):
    """Applies a job's conditions (``{"listing": "hashed"|"name"|"kernel", "listing_key": K,
    "seed": S}``, every key required) before its code runs."""
    listing = conditions["listing"]
    if listing == "hashed":
        key = int(conditions["listing_key"]).to_bytes(8, "little")
        _order_listings(lambda name: hashlib.blake2b(name, key=key, digest_size=8).digest())
    elif listing == "name":
        _order_listings(lambda name: name)
    elif listing != "kernel":
        raise ValueError(f"unknown listing order {listing!r}")
    seed = int(conditions["seed"])
    random.seed(seed)
    for name, seed_it in _GENERATORS.items():
        if name in sys.modules:
            seed_it(sys.modules[name], seed)
        else:
            sys.meta_path.insert(0, _SeedOnImport(name, seed_it, seed))


# Modules that keep a generator of their own, seeded from fresh entropy when imported, and how to
# seed it.
_GENERATORS = {
    "numpy.random": lambda module, seed: module.seed(seed % (1 << 32)),
    # Faker, which many BigCodeBench tests draw from (fake.random_int, fake.name...): every
    # Faker() shares this module's random.Random. Seeded, a reference solution's run draws what
    # the samples' runs draw, so its time, which sets their budgets, is theirs too.
    "faker.generator": lambda module, seed: module.random.seed(seed),
}


class _SeedOnImport:
    """Seeds ``module`` with ``seed_it(module, seed)`` as soon as it is first imported, for a
    job whose worker did not preload it."""

    def __init__(self, module, seed_it, seed):
        self.module, self.seed_it, self.seed = module, seed_it, seed

    def find_spec(self, name, path=None, target=None):
        if name != self.module:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        load, seed_it, seed = spec.loader.exec_module, self.seed_it, self.seed

        def exec_and_seed(module):
            load(module)
            seed_it(module, seed)

        spec.loader.exec_module = exec_and_seed
        return spec


class _Listing:
    """What ``os.scandir`` returns (an iterator of ``DirEntry`` that is also a context manager),
    over entries already read and ordered."""

    def __init__(self, entries):
        self._entries = iter(entries)

    def __iter__(self):
        return self

    def __next__(self):
        return next(self._entries)

    def close(self):
        self._entries = iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _order_listings(order_of):
    """Replaces ``os.listdir`` and ``os.scandir`` (in ``os`` and ``posix``, so ``os.walk`` and
    everything that looks them up at call time follows) with versions that return the kernel's
    entries sorted by ``order_of(name as bytes)``."""
    listdir, scandir = posix.listdir, posix.scandir

    def key(name):
        return order_of(name if isinstance(name, bytes) else os.fsencode(name))

    def ordered_listdir(path=None):
        names = listdir(path)
        names.sort(key=key)
        return names

    def ordered_scandir(path=None):
        with scandir(path) as found:
            entries = list(found)
        entries.sort(key=lambda entry: key(entry.name))
        return _Listing(entries)

    ordered_listdir.__doc__, ordered_scandir.__doc__ = listdir.__doc__, scandir.__doc__
    ordered_listdir.__name__, ordered_scandir.__name__ = "listdir", "scandir"
    for module in (os, posix):
        module.listdir, module.scandir = ordered_listdir, ordered_scandir
    # They take a descriptor as the originals do.
    os.supports_fd.update((ordered_listdir, ordered_scandir))
