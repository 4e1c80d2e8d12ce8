"""Runs one backend's share of end-to-end test modules, so that ctest can run a slow
module's SQLite and PostgreSQL tests side by side as two tests (tests/CMakeLists.txt).

    python3 one_backend.py sqlite|postgresql MODULE...

A test belongs to the backend its class names in BACKEND (ServerTestCase's); a test whose
class names none belongs to SQLite's share, so that every test of the modules runs in
exactly one share. Module and class fixtures run as `python3 -m unittest` runs them.
"""

import sys
import unittest

BACKENDS = ("sqlite", "postgresql")


def flatten(suite):
    for t in suite:
        if isinstance(t, unittest.TestSuite):
            yield from flatten(t)
        else:
            yield t


def share(tests, backend):
    """The tests of `tests` that run on `backend`, in their order."""
    return [t for t in tests if getattr(t, "BACKEND", "sqlite") == backend]


def main(argv):
    if len(argv) < 3 or argv[1] not in BACKENDS:
        print(f"usage: {argv[0]} {'|'.join(BACKENDS)} MODULE...", file=sys.stderr)
        return 2
    tests = list(flatten(unittest.defaultTestLoader.loadTestsFromNames(argv[2:])))
    mine = share(tests, argv[1])
    if not mine:
        print(f"no test of {', '.join(argv[2:])} runs on {argv[1]}", file=sys.stderr)
        return 1
    result = unittest.TextTestRunner(verbosity=2).run(unittest.TestSuite(mine))
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
