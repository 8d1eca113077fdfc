# SPDX-License-Identifier: Apache-2.0
"""The soft-RoCE test VM, host side: an initramfs from files in this folder and Debian's
kernel (setup.sh put it in the cache), qemu in TCG with the host's root shared read-only
over 9p, and the guest's TAP read back from a second serial port.

The guest runs guest.sh from the source tree under test (the 9p share), which runs
guest_checks.py with the plan given here; the console (first serial port) is kept for
the report when the guest does not finish.
"""

import os
import re
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# What /init needs before the 9p root is there (their dependencies come from modules.dep).
INITRAMFS_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay"]
# A guest kernel that locks up ends its boot (softlockup_panic=1, panic=-1 with
# -no-reboot): these console lines tell such an end from a guest that just failed.
LOCKUP = re.compile(r"soft lockup|rcu_sched self-detected stall|rcu: INFO: rcu_.*detected "
                    r"stalls|Kernel panic")


def kernel_version(kdir):
    with open(os.path.join(kdir, "VERSION")) as f:
        return f.read().strip()


def module_order(kdir, version, names):
    """The .ko paths of names and their dependencies, each after what it depends on."""
    moddir = os.path.join(kdir, "lib", "modules", version)
    deps = {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[os.path.basename(path)[:-3].replace("-", "_")] = (path, rest.split())
    order = []

    def visit(name):
        path, needs = deps[name]
        for n in needs:
            visit(os.path.basename(n)[:-3].replace("-", "_"))
        if path not in order:
            order.append(path)

    for n in names:
        visit(n)
    return [os.path.join(moddir, p) for p in order]


def build_initramfs(kdir, params, out):
    """Writes the initramfs (newc cpio) to out: busybox, /init, the 9p and overlay
    modules, and /params (shell assignments read by /init)."""
    version = kernel_version(kdir)
    root = tempfile.mkdtemp(prefix="rdma-cdi-initramfs-")
    try:
        os.makedirs(os.path.join(root, "bin"))
        os.makedirs(os.path.join(root, "modules.d"))
        shutil.copy("/bin/busybox", os.path.join(root, "bin", "busybox"))
        shutil.copy(os.path.join(HERE, "initramfs-init"), os.path.join(root, "init"))
        os.chmod(os.path.join(root, "init"), 0o755)
        names = []
        for path in module_order(kdir, version, INITRAMFS_MODULES):
            name = os.path.basename(path)[:-3]
            shutil.copy(path, os.path.join(root, "modules.d", name + ".ko"))
            names.append(name)
        with open(os.path.join(root, "modules"), "w") as f:
            f.write("\n".join(names) + "\n")
        with open(os.path.join(root, "params"), "w") as f:
            for k, v in params.items():
                f.write("%s='%s'\n" % (k, v.replace("'", "")))
        files = subprocess.run(["find", "."], cwd=root, check=True, capture_output=True,
                               text=True).stdout
        with open(out, "wb") as f:
            subprocess.run(["cpio", "--quiet", "-o", "-H", "newc"], cwd=root, input=files.encode(),
                           stdout=f, check=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class Boot:
    """One boot's outcome: console and TAP text, how it ended, how long it took."""

    def __init__(self, console, tap, ended, seconds):
        self.console = console
        self.tap = tap
        self.ended = ended  # "poweroff", "timeout" or "lockup"
        self.seconds = seconds


def boot(kdir, params, timeout, workdir, memory=2048, cpus=2):
    """Boots the VM once and waits for it to power off, at most timeout seconds."""
    initrd = os.path.join(workdir, "initrd.cpio")
    console = os.path.join(workdir, "console.log")
    tap = os.path.join(workdir, "tap.log")
    build_initramfs(kdir, params, initrd)
    for p in (console, tap):
        open(p, "w").close()
    argv = ["qemu-system-x86_64", "-machine", "q35", "-cpu", "max", "-m", str(memory),
            "-smp", str(cpus), "-display", "none", "-monitor", "none", "-no-reboot",
            "-nic", "none", "-kernel", os.path.join(kdir, "vmlinuz"), "-initrd", initrd,
            "-append", "console=ttyS0 quiet loglevel=4 panic=-1 softlockup_panic=1",
            "-serial", "file:" + console, "-serial", "file:" + tap,
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,"
            "multidevs=remap"]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    try:
        out, _ = proc.communicate(timeout=timeout)
        ended = "poweroff"
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        ended = "timeout"
    finally:
        # Never leave a VM behind, whatever ended this (SIGTERM from meson's timeout too).
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seconds = time.monotonic() - t0
    text = read_text(console)
    if out:
        text += "\n[qemu] " + out.decode(errors="replace")
    if LOCKUP.search(text):
        ended = "lockup"
    return Boot(text, read_text(tap).replace("\r", ""), ended, seconds)


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode(errors="replace")
