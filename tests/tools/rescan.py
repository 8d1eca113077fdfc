# SPDX-License-Identifier: Apache-2.0
"""Waiting for the daemons' periodic rescan (discovery/follow.c).

A sysfs change that brings no device node event (a device lent to another network
namespace and back, a rename, a port going down) is seen by the periodic rescan only. Its
period stretches when one rescan costs more than 1/1000 of a core, which a sanitizer build
on a busy 2-core machine does: it then rescans every few seconds, not every
--rescan-interval, and logs so."""

import re
import time

# How long a test waits for a change only the periodic rescan can see.
RESCAN_WAIT = 30.0

_STRETCHED = re.compile(r"a periodic rescan costs [0-9.]+ ms of CPU here: running it every "
                        r"([0-9]+) s")


def rescan_period(log_text, interval=1.0):
    """The period the daemon whose log is log_text rescans with now, in seconds."""
    m = _STRETCHED.findall(log_text)
    return max(interval, float(m[-1])) if m else interval


def sleep_one_rescan(log_text, interval=1.0):
    """Sleeps long enough for one more periodic rescan to run: a test that asserts that
    nothing follows a change must give the rescan its chance."""
    time.sleep(rescan_period(log_text, interval) + 0.5)
