# SPDX-License-Identifier: Apache-2.0
"""The TAP producer every Python test uses (meson reads it with protocol: 'tap').

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    from tap import Tap
"""
import sys


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, what, diag=None):
        """One result line; diag (any text) is printed as comments when cond fails."""
        self.n += 1
        # Descriptions quote hostile input: one line, and no '#' that TAP would read as
        # a directive.
        what = " ".join(str(what).replace("#", " ").split())
        print("%sok %d - %s" % ("" if cond else "not ", self.n, what))
        if not cond:
            self.failed += 1
            if diag:
                self.diag(diag)
        sys.stdout.flush()
        return bool(cond)

    def skip(self, what, why):
        """A check that cannot run here: reported as a skip, never as a pass."""
        self.n += 1
        print("ok %d - %s # SKIP %s" % (self.n, " ".join(what.replace("#", " ").split()), why))
        sys.stdout.flush()

    def diag(self, text):
        for line in str(text).splitlines():
            print("#   " + line)
        sys.stdout.flush()

    def done(self):
        """Prints the plan; returns the exit status."""
        print("1..%d" % self.n)
        sys.stdout.flush()
        return 1 if self.failed else 0
