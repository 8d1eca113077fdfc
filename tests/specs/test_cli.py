#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""`rdma-cdi generate`, `list` and `discover` as a user runs them.

Environment (set by meson): RDMA_CDI (the binary), MKSYSFS (fixture builder), DATA_DIR
(tests/data), VALIDATE (validate-cdi-schema.py), SCHEMA_DIR. UPDATE_GOLDEN=1 rewrites
the golden specs instead of comparing against them.
"""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import yaml

RDMA_CDI = os.environ["RDMA_CDI"]
MKSYSFS = os.environ["MKSYSFS"]
DATA = os.environ["DATA_DIR"]
VALIDATE = os.environ["VALIDATE"]
# -Dbridge=disabled: no daemon to give usage errors (tests/cli/test-linkage.py checks it).
BRIDGE_USAGE = (["bridge", "--rescan-interval", "-3"], ["bridge", "--shared", "0"],
                ["bridge", "--resource", "kubernetes.io/hca"],
                ["bridge", "--device-list-strategy", "envvar"]) \
    if os.environ.get("RDMA_CDI_HAVE_BRIDGE", "1") == "1" else ()
SCHEMA = os.environ["SCHEMA_DIR"]
GOLDEN = os.path.join(DATA, "golden")
HOOK = "/usr/libexec/rdma-cdi/rdma-cdi-hook"
KIND = "rdma.example/hca"


def run(*args, check=None):
    p = subprocess.run([RDMA_CDI, *args], capture_output=True, text=True, timeout=60)
    if check is not None and p.returncode != check:
        raise AssertionError(f"rdma-cdi {' '.join(args)}: exit {p.returncode}, want {check}\n"
                             f"stdout: {p.stdout}\nstderr: {p.stderr}")
    return p


def sysfs(profile):
    return os.path.join(DATA, profile, "sys")


class Tmp(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rdma-cdi-test-")
        self.specdir = os.path.join(self.tmp, "cdi")
        self.dev = os.path.join(self.tmp, "dev")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def mkdev(self, profile, *omit):
        args = [MKSYSFS, "mkdev", sysfs(profile), self.dev]
        for o in omit:
            args += ["--omit", o]
        subprocess.run(["/usr/bin/python3", *args], check=True)

    def copy_tree(self, profile):
        dst = os.path.join(self.tmp, profile)
        shutil.copytree(sysfs(profile), dst, symlinks=True)
        return dst

    def validate(self, path, max_version="0.5.0"):
        p = subprocess.run(["/usr/bin/python3", VALIDATE, "--max-version", max_version,
                            SCHEMA, path], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


class Golden(Tmp):
    """The whole spec for each fixture node, byte for byte, and schema-valid."""

    cases = [
        ("dgx", "json", []),
        ("dgx", "yaml", []),
        ("dgx-mad", "json", ["--with-mad"]),
        ("sriov", "json", []),
        ("quirks", "json", []),
    ]

    def test_golden(self):
        for name, fmt, extra in self.cases:
            with self.subTest(name=name, fmt=fmt):
                profile = name.split("-")[0]
                out = os.path.join(self.tmp, f"{name}.{fmt}")
                run("generate", "--sysfs-root", sysfs(profile), "--dev-root", "/dev",
                    "--hook-path", HOOK, "--format", fmt, "--output", out, *extra, check=0)
                self.validate(out)
                golden = os.path.join(GOLDEN, f"{name}.{fmt}")
                with open(out) as f:
                    got = f.read()
                if os.environ.get("UPDATE_GOLDEN"):
                    os.makedirs(GOLDEN, exist_ok=True)
                    with open(golden, "w") as f:
                        f.write(got)
                with open(golden) as f:
                    self.assertEqual(got, f.read(), f"{out} differs from {golden}")

    def test_yaml_and_json_say_the_same(self):
        outs = {}
        for fmt in ("json", "yaml"):
            out = os.path.join(self.tmp, f"s.{fmt}")
            run("generate", "--sysfs-root", sysfs("dgx"), "--hook-path", HOOK,
                "--format", fmt, "--output", out, check=0)
            with open(out) as f:
                outs[fmt] = json.load(f) if fmt == "json" else yaml.safe_load(f)
        self.assertEqual(outs["json"], outs["yaml"])
        # Numeric device names must stay strings in YAML, or runtimes see integers.
        names = [d["name"] for d in outs["yaml"]["devices"]]
        self.assertIn("0", names)


class Content(Tmp):
    def spec(self, profile, *extra):
        out = os.path.join(self.tmp, "spec.json")
        run("generate", "--sysfs-root", sysfs(profile), "--dev-root", self.dev,
            "--hook-path", HOOK, "--output", out, *extra, check=0)
        with open(out) as f:
            return json.load(f)

    @staticmethod
    def nodes(dev):
        return {n["path"]: (n["major"], n["minor"], n["hostPath"])
                for n in dev["containerEdits"].get("deviceNodes", [])}

    def test_dgx_devices(self):
        self.mkdev("dgx")
        s = self.spec("dgx")
        self.assertEqual(s["cdiVersion"], "0.5.0")
        self.assertEqual(s["kind"], KIND)
        by = {d["name"]: d for d in s["devices"]}
        for i in range(10):
            self.assertIn(f"mlx5_{i}", by)
            self.assertIn(str(i), by)
        self.assertIn("all", by)
        # Each HCA also by the device ID the kubelet sees: its PCI address.
        disc = json.loads(run("discover", "--json", "--sysfs-root", sysfs("dgx"),
                              check=0).stdout)
        for d in disc["devices"]:
            self.assertEqual(by[d["pci"]]["containerEdits"], by[d["name"]]["containerEdits"])
        self.assertEqual(self.nodes(by["0000:3c:00.0"]), self.nodes(by["mlx5_3"]))
        self.assertEqual(len(s["devices"]), 31)
        self.assertEqual(self.nodes(by["mlx5_3"]),
                         {"/dev/infiniband/uverbs3":
                          (231, 195, self.dev + "/infiniband/uverbs3")})
        self.assertEqual(len(self.nodes(by["all"])), 10)
        top = s["containerEdits"]
        self.assertEqual(self.nodes(s)["/dev/infiniband/rdma_cm"][:2], (10, 57))
        self.assertEqual(top["hooks"], [{"hookName": "createRuntime", "path": HOOK,
                                         "args": ["rdma-cdi-hook", "--memlock=unlimited"]}])

    def test_index_follows_pci_order_and_aliases_agree(self):
        s = self.spec("dgx")
        by = {d["name"]: d for d in s["devices"]}
        disc = json.loads(run("discover", "--json", "--sysfs-root", sysfs("dgx"),
                              check=0).stdout)
        usable = [d for d in disc["devices"] if d["usable"]]
        pcis = [d["pci"] for d in usable]
        self.assertEqual(pcis, sorted(pcis))
        for i, d in enumerate(usable):
            self.assertEqual(by[str(i)]["containerEdits"], by[d["name"]]["containerEdits"])

    def test_with_mad(self):
        s = self.spec("dgx", "--with-mad")
        by = {d["name"]: d for d in s["devices"]}
        paths = set(self.nodes(by["mlx5_0"]))
        self.assertIn("/dev/infiniband/uverbs0", paths)
        self.assertTrue(any(p.startswith("/dev/infiniband/umad") for p in paths))

    def test_quirks_leave_out_unusable(self):
        s = self.spec("quirks")
        names = {d["name"] for d in s["devices"]}
        self.assertNotIn("smi1", names)  # no uverbs: not usable through verbs
        for n in ("rocep59s0f0", "ibp12s0", "mlx5_bond_0"):
            self.assertIn(n, names)
        # mlx5_0 shares 0000:0b:00.0 with smi1, which is not usable: the bare address.
        self.assertIn("0000:0b:00.0", names)
        # The SF has no PCI address: its RDMA name is its ID, not defined twice.
        self.assertIn("rocep59s0f0S88", names)
        self.assertEqual(len([d for d in s["devices"] if d["name"] == "rocep59s0f0S88"]), 1)
        self.assertNotIn("0000:d8:00.0", names)  # mlx5_4: not usable
        self.assertIn("0000:d8:00.1", names)
        p = run("generate", "--sysfs-root", sysfs("quirks"), "--output", "-",
                "--hook-path", HOOK, check=0)
        self.assertIn("smi1", p.stderr)  # reported, not silently dropped

    def test_missing_hook_is_warned_about(self):
        out = os.path.join(self.tmp, "s.json")
        p = run("generate", "--sysfs-root", sysfs("sriov"), "--hook-path", "/nonexistent/hook",
                "--output", out, check=0)
        self.assertIn("hook /nonexistent/hook does not exist", p.stderr)
        p = run("generate", "--sysfs-root", sysfs("sriov"), "--hook-path", "/bin/true",
                "--output", out, check=0)
        self.assertNotIn("does not exist", p.stderr)

    def test_memlock_and_kind(self):
        s = self.spec("sriov", "--memlock", "512M", "--kind", "acme.io/rdma")
        self.assertEqual(s["kind"], "acme.io/rdma")
        self.assertEqual(s["containerEdits"]["hooks"][0]["args"][1], "--memlock=512M")


class Writing(Tmp):
    def generate(self, profile="dgx", *extra, check=0, root=None):
        return run("generate", "--sysfs-root", root or sysfs(profile), "--spec-dir",
                   self.specdir, "--hook-path", HOOK, *extra, check=check)

    def target(self, ext="json"):
        return os.path.join(self.specdir, f"rdma.example-hca.{ext}")

    def test_creates_dir_mode_and_no_temp_left(self):
        old = os.umask(0o077)
        try:
            self.generate()
        finally:
            os.umask(old)
        st = os.stat(self.target())
        self.assertEqual(st.st_mode & 0o777, 0o644)
        self.assertEqual(os.listdir(self.specdir), ["rdma.example-hca.json"])
        self.validate(self.target())

    def test_unchanged_spec_is_left_untouched(self):
        self.generate()
        before = os.stat(self.target())
        p = self.generate()
        after = os.stat(self.target())
        self.assertEqual((before.st_ino, before.st_mtime_ns), (after.st_ino, after.st_mtime_ns))
        self.assertIn("unchanged", p.stderr)

    def test_changed_node_replaces_file(self):
        tree = self.copy_tree("dgx")
        self.generate(root=tree)
        before = os.stat(self.target())
        # mlx5_9 loses its uverbs: the spec must shrink.
        link = os.path.join(tree, "class", "infiniband_verbs", "uverbs9")
        os.unlink(link)
        self.generate(root=tree)
        after = os.stat(self.target())
        self.assertNotEqual(before.st_ino, after.st_ino)
        with open(self.target()) as f:
            names = {d["name"] for d in json.load(f)["devices"]}
        self.assertNotIn("mlx5_9", names)
        self.assertNotIn("9", names)

    def test_format_switch_removes_our_other_copy(self):
        self.generate()
        self.generate("dgx", "--format", "yaml")
        self.assertEqual(sorted(os.listdir(self.specdir)), ["rdma.example-hca.yaml"])
        p = run("list", "--spec-dir", self.specdir, check=0)
        self.assertIn("rdma.example/hca=mlx5_0", p.stdout)

    def test_foreign_file_is_never_touched(self):
        os.makedirs(self.specdir)
        foreign = '{"cdiVersion":"0.5.0","kind":"rdma.example/hca","devices":[{"name":"x",' \
                  '"containerEdits":{"env":["A=1"]}}]}\n'
        with open(self.target(), "w") as f:
            f.write(foreign)
        p = self.generate(check=1)
        self.assertIn("not written by rdma-cdi", p.stderr)
        with open(self.target()) as f:
            self.assertEqual(f.read(), foreign)
        # A foreign copy in the other format is not ours to remove either: we warn.
        os.rename(self.target(), self.target("yaml"))
        with open(self.target("yaml"), "w") as f:
            f.write(yaml.safe_dump(json.loads(foreign)))
        p = self.generate()
        self.assertTrue(os.path.exists(self.target("yaml")))

    def test_fifo_in_spec_dir_neither_hangs_nor_is_removed(self):
        # The other-format file is read to see whether it is ours: a FIFO there must be
        # refused as "not ours", not waited on forever.
        os.makedirs(self.specdir)
        os.mkfifo(self.target("yaml"))
        p = subprocess.run([RDMA_CDI, "generate", "--sysfs-root", sysfs("dgx"),
                            "--spec-dir", self.specdir, "--hook-path", HOOK],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(os.path.exists(self.target("yaml")))
        self.validate(self.target())

    def test_symlink_target_refused(self):
        os.makedirs(self.specdir)
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.symlink(victim, self.target())
        p = self.generate(check=1)
        self.assertIn("symlink", p.stderr)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        self.assertTrue(os.path.islink(self.target()))

    def test_symlinked_spec_dir_refused(self):
        real = os.path.join(self.tmp, "elsewhere")
        os.makedirs(real)
        os.symlink(real, self.specdir)
        p = self.generate(check=1)
        self.assertIn("symlink", p.stderr)
        self.assertEqual(os.listdir(real), [])

    def test_no_usable_device_keeps_last_good_spec(self):
        self.generate()
        with open(self.target()) as f:
            good = f.read()
        empty = os.path.join(self.tmp, "empty-sys")
        os.makedirs(os.path.join(empty, "class", "infiniband"))
        p = self.generate(root=empty, check=3)
        self.assertIn("no usable RDMA device", p.stderr)
        with open(self.target()) as f:
            self.assertEqual(f.read(), good)

    def test_bad_sysfs_root(self):
        p = self.generate(root=os.path.join(self.tmp, "nope"), check=1)
        self.assertIn("nope", p.stderr)

    def test_output_stdout(self):
        p = run("generate", "--sysfs-root", sysfs("sriov"), "--output", "-", "--hook-path",
                HOOK, check=0)
        s = json.loads(p.stdout)
        self.assertEqual(s["kind"], KIND)


class Usage(Tmp):
    def test_bad_flags_exit_2(self):
        for args in (["generate", "--kind", "r/hca"],          # 1-char vendor panics CDI libs
                     ["generate", "--kind", "rdma.example/h.ca"],  # dot in class needs 0.6.0
                     ["generate", "--kind", "nokind"],
                     ["generate", "--format", "toml"],
                     ["generate", "--hook-path", "relative/hook"],
                     ["generate", "--memlock", "lots"],
                     ["generate", "--memlock", "0"],  # the hook refuses 0: no spec may say it
                     ["generate", "--json"],
                     ["generate", "--output", "x", "--spec-dir", "y"],
                     ["list", "--output", "x"],
                     ["generate", "--rescan-interval", "5"],
                     ["frobnicate"],
                     ["generate", "stray"]) + BRIDGE_USAGE:
            with self.subTest(args=args):
                p = run(*args, check=2)
                self.assertTrue(p.stderr.strip(), "a usage error must say why")

    def test_help_and_version(self):
        self.assertIn("generate", run("--help", check=0).stdout)
        self.assertIn("rdma-cdi", run("version", check=0).stdout)


class Listing(Tmp):
    def test_list_names_invalid_and_conflicts(self):
        etc = os.path.join(self.tmp, "etc-cdi")
        var = os.path.join(self.tmp, "var-cdi")
        run("generate", "--sysfs-root", sysfs("sriov"), "--spec-dir", etc, "--hook-path",
            HOOK, check=0)
        p = run("list", "--spec-dir", etc, "--spec-dir", var, check=0)
        names = [line.split("\t")[0] for line in p.stdout.splitlines()]
        self.assertIn("rdma.example/hca=mlx5_0", names)
        self.assertIn("rdma.example/hca=all", names)
        self.assertIn("rdma.example/hca=0", names)

        os.makedirs(var)
        with open(os.path.join(var, "broken.json"), "w") as f:
            f.write("{not json")
        dup = {"cdiVersion": "0.5.0", "kind": KIND,
               "devices": [{"name": "mlx5_0", "containerEdits": {"env": ["A=1"]}}]}
        with open(os.path.join(etc, "other.json"), "w") as f:
            json.dump(dup, f)
        p = run("list", "--spec-dir", etc, "--spec-dir", var, check=4)
        self.assertIn("broken.json", p.stderr)
        self.assertIn("rdma.example/hca=mlx5_0", p.stderr)  # conflict named
        # generate warns about the conflict it cannot fix.
        p = run("generate", "--sysfs-root", sysfs("sriov"), "--spec-dir", etc, "--hook-path",
                HOOK, check=0)
        self.assertIn("rdma.example/hca=mlx5_0", p.stderr)


class Discover(Tmp):
    def test_table(self):
        self.mkdev("dgx")
        p = run("discover", "--sysfs-root", sysfs("dgx"), "--dev-root", self.dev, check=0)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].split()[:3] == ["INDEX", "NAME", "PCI"])
        self.assertTrue(any("mlx5_7" in line and "InfiniBand" in line for line in lines))
        self.assertTrue(any("Ethernet" in line for line in lines))
        self.assertIn("rdma_cm: 10:57", p.stdout)

    def test_sriov_table_names_pf(self):
        p = run("discover", "--sysfs-root", sysfs("sriov"), check=0)
        self.assertIn("VF of 0000:3b:00.0", p.stdout)

    def test_json(self):
        self.mkdev("dgx", "uverbs2")
        p = run("discover", "--json", "--sysfs-root", sysfs("dgx"), "--dev-root", self.dev,
                check=0)
        j = json.loads(p.stdout)
        self.assertEqual(len(j["devices"]), 10)
        self.assertTrue(any("uverbs2" in pr for pr in j["problems"]))

    def test_netns_mode(self):
        # The running kernel's mode, whatever the fixture: text and JSON say the same.
        # (The real kernel's exclusive and shared modes: tests/kernel.)
        t = run("discover", "--sysfs-root", sysfs("dgx"), check=0).stdout.splitlines()
        modes = [line for line in t if line.startswith("RDMA netns mode: ")]
        self.assertEqual(len(modes), 1, t)
        mode = modes[0].split(": ", 1)[1]
        self.assertIn(mode, ("exclusive", "shared", "unknown"))
        j = json.loads(run("discover", "--json", "--sysfs-root", sysfs("dgx"), check=0).stdout)
        self.assertEqual(j["netnsMode"], mode)
        if not os.path.isdir("/sys/module/ib_core"):
            self.assertEqual(mode, "unknown")  # no RDMA core: no RDMA netlink


if __name__ == "__main__":
    unittest.main(verbosity=2)
