/* SPDX-License-Identifier: Apache-2.0 */
/*
 * LD_PRELOAD shim for the clock-jump test, loaded before libfaketime: timerfd_settime()
 * and timerfd_gettime() go straight to the kernel. libfaketime 0.9.10 shifts every
 * absolute timerfd deadline by its offset, CLOCK_MONOTONIC ones too (even with
 * FAKETIME_DONT_FAKE_MONOTONIC), which no real wall-clock step does; with this shim the
 * process sees CLOCK_REALTIME jump through clock_gettime() and friends while its timers
 * keep the kernel's semantics, as on a host whose clock is stepped.
 */
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value,
		    struct itimerspec *old_value)
{
	return (int)syscall(SYS_timerfd_settime, fd, flags, new_value, old_value);
}

int timerfd_gettime(int fd, struct itimerspec *curr_value)
{
	return (int)syscall(SYS_timerfd_gettime, fd, curr_value);
}
