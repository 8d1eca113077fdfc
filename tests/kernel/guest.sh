#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The guest's first process after the initramfs: the host's userland over 9p with a tmpfs
# overlay. Mounts what podman and the checks need, runs guest_checks.py with the plan the
# host chose (its TAP on the second serial port, its stderr on the console), powers off.
# Every step is bounded; the host side bounds the whole boot as well.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
# Not /tmp: the source tree or the build dir may be under the host's /tmp (the overlay's
# tmpfs upper takes the guest's writes anyway).
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /dev/pts /dev/shm /var/lib/containers
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mount -t tmpfs tmpfs /var/lib/containers
mkdir -p /etc/cdi /var/run/cdi
mount -t tmpfs tmpfs /etc/cdi
hostname rdma-cdi-vm
ip link set lo up
echo "rdma-cdi-vm: guest up ($(uname -r))"
timeout -k 5 "${RDMA_CDI_VM_GUEST_TIMEOUT:-600}" /usr/bin/python3 \
	"$RDMA_CDI_VM_SRC/tests/kernel/guest_checks.py" "$RDMA_CDI_VM_ARGS" \
	>/dev/ttyS1 2>/dev/console
echo "rdma-cdi-vm: guest checks exited $?"
sync
poweroff -f
