#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The manual pages render, and they and the bash completion cannot drift from the
binaries: every command of `rdma-cdi --help` has its subsection in rdma-cdi(8) and its
completion; every option of each command's --help is in both, and nothing else is.

Environment (set by meson): RDMA_CDI, RDMA_CDI_HOOK, MAN_DIR (the generated pages),
COMPLETION (the generated bash completion), BUILD_ROOT (for `meson install --destdir`).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI = os.environ["RDMA_CDI"]
HOOK = os.environ["RDMA_CDI_HOOK"]
MAN_DIR = os.environ["MAN_DIR"]
COMPLETION = os.environ["COMPLETION"]
PAGES = ["rdma-cdi.8", "rdma-cdi-hook.8", "rdma-cdi.yaml.5"]

tap = Tap()


def out(*cmd, env=None):
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr


def help_options(text):
    """The long options of a --help page ("  --name ARG  text" or "  -h, --help")."""
    return set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z0-9-]*)", text, re.M))


def help_commands(text):
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


def render(page):
    """The page as a reader sees it: man -l, else groff, else None."""
    path = os.path.join(MAN_DIR, page)
    if shutil.which("man"):
        rc, text, err = out("man", "-l", path, env={"MANWIDTH": "100", "MAN_KEEP_FORMATTING": "",
                                                   "MANPAGER": "cat", "PAGER": "cat"})
        return rc, text, err, "man -l"
    if shutil.which("groff"):
        rc, text, err = out("groff", "-man", "-Tutf8", "-ww", path)
        return rc, re.sub(r".\x08", "", text), err, "groff"
    return None


def parse_check(page):
    """Without a formatter: every line is text or a request this generator emits."""
    known = {".TH", ".SH", ".SS", ".PP", ".TP", ".IP", ".RS", ".RE", ".nf", ".fi", '.\\"'}
    with open(os.path.join(MAN_DIR, page)) as f:
        lines = f.read().splitlines()
    bad = [line for line in lines
           if line.startswith((".", "'")) and line.split()[0] not in known]
    return lines[1].startswith(".TH") and not bad, bad


def sections(text):
    """Rendered rdma-cdi(8) -> {section: text}, and {command: text} for COMMANDS."""
    secs, subs = {}, {}
    cur = sub = None
    for line in text.splitlines():
        if re.match(r"^[A-Z][A-Z ]+$", line):
            cur, sub = line.strip(), None
            secs[cur] = ""
        elif cur == "COMMANDS" and re.match(r"^   [a-z]+$", line):
            sub = line.strip()
            subs[sub] = ""
        elif cur:
            secs[cur] += line + "\n"
            if sub:
                subs[sub] += line + "\n"
    return secs, subs


def man_options(text):
    """Option terms of a rendered section: lines "       --name ARG" (7 spaces)."""
    return set(re.findall(r"^ {7}(?:-\w, )?(--[a-z][a-z0-9-]*)", text, re.M))


def completion_words():
    with open(COMPLETION) as f:
        text = f.read()
    per = dict(re.findall(r"^    ([a-z]+)\) COMPREPLY=\(\$\(compgen -W '([^']*)'", text, re.M))
    return {k: v.split() for k, v in per.items()}


def complete(*words):
    """What bash offers for `rdma-cdi WORDS...` (the last word being completed)."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _rdma_cdi; '
              'printf "%s\\n" "${COMPREPLY[@]}"')
    rc, text, err = out("bash", "--norc", "-c", script, "bash", COMPLETION, "rdma-cdi", *words)
    return rc, sorted(text.split()), err


def test_render():
    for page in PAGES:
        r = render(page)
        if r is None:
            good, bad = parse_check(page)
            tap.ok(good, "%s parses (no formatter here)" % page, bad)
            continue
        rc, text, err, how = r
        tap.ok(rc == 0 and "NAME" in text and "SEE ALSO" in text and not err.strip(),
               "%s renders with %s, no warnings" % (page, how), err)
        if shutil.which("groff"):
            rc, _, err = out("groff", "-man", "-Tutf8", "-ww", "-z",
                             os.path.join(MAN_DIR, page))
            tap.ok(rc == 0 and not err.strip(), "%s: groff -ww has no warning" % page, err)


def test_rdma_cdi_page():
    r = render("rdma-cdi.8")
    if r is None:
        tap.skip("rdma-cdi(8) lists what --help lists", "no man or groff to render it")
        return
    text = r[1]
    secs, subs = sections(text)
    _, main_help, _ = out(RDMA_CDI, "--help")
    commands = help_commands(main_help)
    tap.ok(sorted(subs) == sorted(commands), "rdma-cdi(8) has a subsection per command",
           "man: %s\n--help: %s" % (sorted(subs), sorted(commands)))
    comp = completion_words()
    tap.ok(sorted(comp.get("help", [])) == sorted(commands),
           "the completion offers every command after 'help'", comp.get("help"))
    globals_man = man_options(secs.get("GLOBAL OPTIONS", ""))
    tap.ok(help_options(main_help) == globals_man,
           "global options: rdma-cdi --help == GLOBAL OPTIONS of the page",
           "%s vs %s" % (sorted(help_options(main_help)), sorted(globals_man)))
    for cmd in commands:
        if cmd in ("help", "version"):
            continue
        # The DRA driver needs the bridge's libraries: a build without one has neither.
        if cmd in ("bridge", "dra") and os.environ.get("RDMA_CDI_HAVE_BRIDGE", "1") != "1":
            tap.skip("%s: its --help options in rdma-cdi(8) and the completion" % cmd,
                     "built without the bridge")
            continue
        _, h, _ = out(RDMA_CDI, cmd, "--help")
        want = help_options(h)
        in_man = man_options(subs.get(cmd, "")) | (globals_man - {"--version"})
        tap.ok(want and want == in_man, "%s: every --help option is in rdma-cdi(8), no other"
               % cmd, "missing %s, extra %s" % (sorted(want - in_man), sorted(in_man - want)))
        in_comp = set(comp.get(cmd, []))
        tap.ok(want == in_comp, "%s: the completion offers exactly the --help options" % cmd,
               "missing %s, extra %s" % (sorted(want - in_comp), sorted(in_comp - want)))


def test_hook_page():
    r = render("rdma-cdi-hook.8")
    if r is None:
        tap.skip("rdma-cdi-hook(8) has every --help option", "no man or groff")
        return
    _, h, _ = out(HOOK, "--help")
    want = set(re.findall(r"(--[a-z][a-z0-9-]*)", h))
    have = set(re.findall(r"(--[a-z][a-z0-9-]*)", r[1]))
    tap.ok(want and want <= have, "rdma-cdi-hook(8) has every option of its --help",
           sorted(want - have))


def test_completion_in_bash():
    if not shutil.which("bash"):
        tap.skip("bash completes", "no bash")
        return
    cases = [(["gen"], ["generate"]),
             (["generate", "--fo"], ["--format"]),
             (["generate", "--format", ""], ["json", "yaml"]),
             (["--log-level", "debug", "li"], ["list"]),
             (["help", "b"], ["bridge"]),
             (["bridge", "--device-list-strategy", "cdi-a"], ["cdi-annotations"]),
             (["list", "--h"], ["--help"])]
    for words, want in cases:
        rc, got, err = complete(*words)
        tap.ok(rc == 0 and got == want, "rdma-cdi %s<TAB> -> %s" % (" ".join(words), want),
               "%s %s" % (got, err))


def test_install():
    build = os.environ.get("BUILD_ROOT")
    meson = shutil.which("meson")
    if not build or not meson:
        tap.skip("meson install puts the pages and the completion in place", "no meson")
        return
    dest = tempfile.mkdtemp(prefix="rdma-cdi-install-")
    try:
        rc, _, err = out(meson, "install", "-C", build, "--destdir", dest, "--no-rebuild",
                         "--quiet")
        found = []
        for dirpath, _, files in os.walk(dest):
            found += ["/" + os.path.relpath(os.path.join(dirpath, f), dest) for f in files]
        want = ["/man8/rdma-cdi.8", "/man8/rdma-cdi-hook.8", "/man5/rdma-cdi.yaml.5"]
        tap.ok(rc == 0 and all(any(p.endswith(w) for p in found) for w in want),
               "meson install: the pages in man8/ and man5/", "%s %s" % (err, found))
        tap.ok(any(p.endswith("/bash-completion/completions/rdma-cdi") for p in found),
               "meson install: the completion in bash-completion/completions", found)
    finally:
        shutil.rmtree(dest, ignore_errors=True)


test_render()
test_rdma_cdi_page()
test_hook_page()
test_completion_in_bash()
test_install()
sys.exit(tap.done())
