#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The guides in docs/guides/ cannot drift from the code:

- every `--flag` they mention is an option of the command it is given to: `rdma-cdi CMD`
  (its --help), rdma-cdi-hook, rdma-cdi-node, or a tool of the guide's subject (podman,
  docker, systemctl, kubectl: that tool's own --help, for kubectl its subcommand's and
  `kubectl options`, when it is installed here, else a TAP skip); a flag written without a
  command must be an option of some rdma-cdi command;
- every ```yaml block is either marked as an rdma-cdi config (first line
  `# rdma-cdi config`), which `rdma-cdi config check` must accept on a fixture node, or a
  Kubernetes object (apiVersion and kind), whose ConfigMap `config.yaml`, if any, is
  checked the same way; ```json and ```toml blocks parse;
- every log line they quote (an inline code span with three plain words in a row that is
  not a command) is made of the string literals of a format in the C sources, its
  conversions holding example values or other formats (`...` elides); messages of other
  programs are listed in FOREIGN_MESSAGES;
- every relative link (and #anchor) resolves, and README.md links to docs/guides/;
- every command they give (in code blocks and inline code) exists: `rdma-cdi CMD` is a
  command of `rdma-cdi --help`, `rdma-cdi config SUB` and `rdma-cdi-node SUB` are in those
  usages, and a path of this repository a command names (deploy/..., tests/...) exists;
- every figure the docs (the guides, README.md, docs/*.md, deploy/README.md) state about a
  bound of the code is that bound, read from the header that defines it (FIGURES): the
  length past which a device ID is hashed, the shared slots per HCA, the IDs per pool;
- no doc repeats a claim the review found false (RETRACTED).

Environment (set by meson): RDMA_CDI, RDMA_CDI_HOOK, RDMA_CDI_NODE, SOURCE_ROOT, DATA_DIR.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from tap import Tap  # noqa: E402

RDMA_CDI = os.environ["RDMA_CDI"]
SOURCE_ROOT = os.environ["SOURCE_ROOT"]
DATA_DIR = os.environ["DATA_DIR"]
GUIDES_DIR = os.path.join(SOURCE_ROOT, "docs", "guides")
FIXTURE_SYSFS = os.path.join(DATA_DIR, "dgx", "sys")
CONFIG_MARK = "# rdma-cdi config"

OURS = {
    "rdma-cdi-hook": os.environ.get("RDMA_CDI_HOOK"),
    "rdma-cdi-node": os.environ.get("RDMA_CDI_NODE"),
}
# Other programs the guides give flags to, and the help that lists those flags.
FOREIGN = {
    "podman": ["run", "--help"],
    "docker": ["run", "--help"],
    "systemctl": ["--help"],
    "kubectl": None,  # per subcommand: `kubectl SUB --help` plus `kubectl options`
}
COMMAND_WORD = re.compile(r"(?:^|(?<=[\s(`\"'/]))(rdma-cdi-hook|rdma-cdi-node|rdma-cdi|"
                          + "|".join(FOREIGN) + r")(?=\s|$)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")

# Spans starting with these are commands, not log lines.
COMMANDS = ("rdma-cdi", "rdma", "kubectl", "systemctl", "journalctl", "podman", "docker",
            "modprobe", "mkdir", "printf")
# Messages of the runtimes quoted in the guides: not rdma-cdi's, so not in its sources.
FOREIGN_MESSAGES = ("unresolvable CDI devices",)

# Figures the docs state and the C constant that decides them: (what, a regex whose group
# 1 is the figure as the docs write it, header, constant).
FIGURES = [
    ("the device ID length past which the RDMA name is hashed",
     r"\bIDs? (?:is |are )?longer than (\d+) characters", "specs/specs.h", "SPEC_ID_MAX"),
    ("the shared slots per HCA", r"sharedSlots: N` \(1 to ([\d,]+)\)|sharedSlots` is 1 to "
     r"([\d,]+)", "config/config.h", "CFG_SHARED_SLOTS_MAX"),
    ("the device IDs per pool", r"at most ([\d,]+) IDs", "config/config.h",
     "CFG_POOL_IDS_MAX"),
]
# Statements the review of issue 16 found false; a doc that says them again is wrong again.
RETRACTED = [
    ("Privilege: none", "the pods write what the host executes (deploy/README.md)"),
    ("runs in both", "exclusive netns mode is broken for moved devices (netns-multus.md)"),
    ("for the same number of pods", "8 slots per 8-HCA pod: sharedSlots is per HCA"),
    ("so pod specs and NetworkAttachmentDefinitions need no", "the counts change (migrating)"),
    ("nodes get", "the DRA driver reads no Node (dra/rbac.yaml)"),
]
FIGURE_DOCS = ["README.md", "deploy/README.md", "docs/*.md", "docs/guides/*.md"]

tap = Tap()


def run(*cmd, timeout=60):
    p = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def help_options(text):
    """The long options of an rdma-cdi --help page ("  --name ARG  text", "  -h, --help")."""
    return set(re.findall(r"^  (?:-\w, )?(--[a-z][a-z0-9-]*)", text, re.M))


def rdma_cdi_helps():
    """{command: options} for every command of `rdma-cdi --help`, globals included; a
    command whose --help fails (a build without it) maps to None."""
    rc, text, err = run(RDMA_CDI, "--help")
    if not tap.ok(rc == 0, "rdma-cdi --help works", err):
        return {}, set()
    glob = help_options(text)
    block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    helps = {}
    for line in block.splitlines():
        cmd = line.split()[0]
        if cmd in ("help", "version"):
            helps[cmd] = glob
            continue
        rc, out, _ = run(RDMA_CDI, cmd, "--help")
        helps[cmd] = (help_options(out) | glob) if rc == 0 else None
    return helps, glob


HELPS, GLOBAL = rdma_cdi_helps()
UNION = set().union(GLOBAL, *[h for h in HELPS.values() if h])
OTHER_HELP = {}


def other_help(tool, sub=None):
    """The help text of one of our other binaries or a foreign tool (kubectl: of its
    subcommand sub, with the global options); None when absent."""
    key = (tool, sub)
    if key not in OTHER_HELP:
        cmds = None
        if tool in OURS:
            path = OURS[tool]
            cmds = [[path, "--help"]] if path and os.path.exists(path) else None
        else:
            path = shutil.which(tool)
            if path and FOREIGN[tool] is None:
                cmds = [[path, sub, "--help"], [path, "options"]] if sub else [[path, "options"]]
            elif path:
                cmds = [[path] + FOREIGN[tool]]
        text = None
        if cmds:
            text = ""
            for cmd in cmds:
                _, out, err = run(*cmd)
                text += out + err
        OTHER_HELP[key] = text
    return OTHER_HELP[key]


# ---- reading the guides ----------------------------------------------------------------

def guides():
    return sorted(os.path.join(GUIDES_DIR, f) for f in os.listdir(GUIDES_DIR)
                  if f.endswith(".md"))


def parse(path):
    """(code blocks [(lang, first line number, text)], prose lines [(number, text)])."""
    blocks, prose = [], []
    lang = None
    buf, start = [], 0
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            m = re.match(r"^\s*```(\S*)", line)
            if m and lang is None:
                lang, buf, start = m.group(1) or "text", [], n + 1
            elif m:
                blocks.append((lang, start, "\n".join(buf)))
                lang = None
            elif lang is not None:
                buf.append(line)
            else:
                prose.append((n, line))
    return blocks, prose


def segments(path):
    """Pieces of text in which a flag belongs to the command word before it: each command
    of a shell line (split at |, &&, ;), each comment, each inline code span, the prose
    around them. Yields (line number, text)."""
    blocks, prose = parse(path)
    for lang, start, text in blocks:
        if lang in ("json", "toml"):
            continue
        joined = text.replace("\\\n", " ")
        for i, line in enumerate(joined.splitlines()):
            code, _, comment = line.partition(" #") if not line.lstrip().startswith("#") \
                else ("", "", line)
            for part in re.split(r"\|\||&&|\||;", code):
                yield start + i, part
            if comment:
                yield start + i, comment
    for n, line in prose:
        spans = re.findall(r"`([^`]+)`", line)
        for s in spans:
            for part in re.split(r"\|\||&&|\||;", s):
                yield n, part
        yield n, re.sub(r"`[^`]+`", " ", line)


def flag_owner(text, pos):
    """The command a flag at pos belongs to: ('rdma-cdi', subcommand|None), (tool, None),
    ('kubectl', subcommand|None), or (None, None) when no command word precedes it."""
    owner = (None, None)
    for m in COMMAND_WORD.finditer(text, 0, pos):
        word = m.group(1)
        if word == "rdma-cdi":
            rest = text[m.end():pos].split()
            while rest and rest[0] in ("--log-level", "--log-format"):
                rest = rest[2:]
            sub = rest[0] if rest and not rest[0].startswith("-") else None
            owner = (word, sub)
        elif FOREIGN.get(word, []) is None:
            rest = text[m.end():pos].split()
            owner = (word, rest[0] if rest and not rest[0].startswith("-") else None)
        else:
            owner = (word, None)
    return owner


def flag_problems(path):
    """([problem], {tool: flags that could not be checked}, number of mentions)."""
    name = os.path.relpath(path, SOURCE_ROOT)
    bad, unchecked, seen = [], {}, 0
    for n, text in segments(path):
        for m in FLAG.finditer(text):
            flag = m.group(1)
            seen += 1
            tool, sub = flag_owner(text, m.start())
            where = "%s:%d: %s" % (name, n, flag)
            if tool is None:
                if flag not in UNION:
                    bad.append(where + " is no option of any rdma-cdi command (a flag of "
                               "another tool needs that tool's name before it)")
            elif tool == "rdma-cdi":
                if sub is None:
                    opts = GLOBAL
                elif sub not in HELPS:
                    bad.append(where + ": rdma-cdi has no command %r" % sub)
                    continue
                else:
                    opts = HELPS[sub]
                if opts is None:
                    unchecked.setdefault("rdma-cdi " + sub + " (not built)", set()).add(flag)
                elif flag not in opts:
                    bad.append(where + " is not in rdma-cdi %s --help" % (sub or ""))
            else:
                helptext = other_help(tool, sub)
                if helptext is None:
                    unchecked.setdefault(tool, set()).add(flag)
                elif not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(flag), helptext):
                    bad.append(where + " is not in %s's help" % tool)
    return bad, unchecked, seen


def check_flags(path):
    name = os.path.relpath(path, SOURCE_ROOT)
    bad, unchecked, seen = flag_problems(path)
    tap.ok(not bad, "%s: its %d --flag mentions are options of their commands" % (name, seen),
           "\n".join(bad))
    for tool, flags in sorted(unchecked.items()):
        tap.skip("%s: %s for %s" % (name, " ".join(sorted(flags)), tool),
                 "%s is not installed here" % tool)


# ---- YAML, JSON, TOML blocks -----------------------------------------------------------

def config_check(text, where):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(text)
    try:
        rc, out, err = run(RDMA_CDI, "config", "check", "--sysfs-root", FIXTURE_SYSFS, f.name)
    finally:
        os.unlink(f.name)
    return tap.ok(rc == 0 and "valid" in out,
                  "%s: rdma-cdi config check accepts it" % where, out + err)


def check_blocks(path):
    name = os.path.relpath(path, SOURCE_ROOT)
    blocks, _ = parse(path)
    n_configs = 0
    for lang, start, text in blocks:
        where = "%s:%d (%s block)" % (name, start, lang)
        if lang == "json":
            try:
                json.loads(text)
                tap.ok(True, where + " is valid JSON")
            except ValueError as e:
                tap.ok(False, where + " is valid JSON", str(e))
        elif lang == "toml":
            try:
                tomllib.loads(text)
                tap.ok(True, where + " is valid TOML")
            except tomllib.TOMLDecodeError as e:
                tap.ok(False, where + " is valid TOML", str(e))
        elif lang == "yaml":
            if text.lstrip().startswith(CONFIG_MARK):
                n_configs += 1
                config_check(text, where)
                continue
            try:
                doc = yaml.safe_load(text)
            except yaml.YAMLError as e:
                tap.ok(False, where + " is valid YAML", str(e))
                continue
            is_object = isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc
            if not tap.ok(is_object, where + " is a Kubernetes object or marked as an rdma-cdi config", "first keys: %s" % (list(doc)[:5]
                                                             if isinstance(doc, dict) else doc)):
                continue
            cfg = (doc.get("data") or {}).get("config.yaml") if doc["kind"] == "ConfigMap" \
                else None
            if cfg is not None:
                n_configs += 1
                config_check(cfg, where + " data.config.yaml")
    return n_configs


def check_flag_harness():
    """The flag check can fail: a flag given to the wrong command, a foreign flag without
    its tool, a misspelt hook option are found; their right forms pass."""
    text = ("```sh\nrdma-cdi generate --plugin-dir /x && rdma-cdi bridge --plugin-dir /x\n```\n"
            "Use `--ulimit memlock=-1` or `podman run --ulimit memlock=-1`, not\n"
            "`rdma-cdi-hook --mem-lock=1`; `rdma-cdi --log-level debug doctor --mr-size 1M`.\n"
            # generate's --netns-move is generate's only; the hook's own spelling is its.
            "`rdma-cdi generate --netns-move`, `rdma-cdi-hook --netns-move-roce=rxe0`, not "
            "`rdma-cdi list --netns-move`.\n")
    want = ["--mem-lock", "--netns-move", "--plugin-dir", "--ulimit"]
    if shutil.which("kubectl"):
        # A subcommand's flag given to another subcommand is found.
        text += "`kubectl drain N --ignore-daemonsets`, not `kubectl label N --ignore-errors`.\n"
        want = ["--ignore-errors"] + want
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(text)
    try:
        bad, _, _ = flag_problems(f.name)
    finally:
        os.unlink(f.name)
    found = sorted(re.search(r":\d+: (--[a-z-]+)", b).group(1) for b in bad)
    tap.ok(found == want, "the flag check finds a flag of the wrong command, a foreign flag "
           "without its tool and a misspelt one, and nothing else", "\n".join(bad))


def check_config_harness():
    """The checker can fail: a config with a misspelt key is refused."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(CONFIG_MARK + "\npools:\n  - resourceName: a.io/x\n    selectors:\n"
                "      vendor: [\"15b3\"]\n")
    try:
        rc, out, err = run(RDMA_CDI, "config", "check", "--sysfs-root", FIXTURE_SYSFS, f.name)
    finally:
        os.unlink(f.name)
    tap.ok(rc != 0 and 'unknown key "vendor"' in err,
           "config check refuses an unknown key (the block check can fail)", out + err)
    # The pool key the exclusive-mode guides use: its values are checked too.
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write(CONFIG_MARK + "\npools:\n  - resourceName: a.io/x\n    netns: moved\n")
    try:
        rc, out, err = run(RDMA_CDI, "config", "check", "--sysfs-root", FIXTURE_SYSFS, f.name)
    finally:
        os.unlink(f.name)
    tap.ok(rc != 0 and "netns: expected none or move" in err,
           "config check refuses netns: moved (a guide's netns value is checked)", out + err)


# ---- links -----------------------------------------------------------------------------

def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to '-'."""
    s = re.sub(r"[`*_]", "", heading.strip().lower())
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path):
    _, prose = parse(path)
    return {slug(m.group(1)) for _, line in prose
            for m in [re.match(r"^#{1,6}\s+(.*)$", line)] if m}


def link_problems(path):
    """([problem], number of relative links)."""
    name = os.path.relpath(path, SOURCE_ROOT)
    _, prose = parse(path)
    bad, n = [], 0
    for ln, line in prose:
        line = re.sub(r"`[^`]+`", "", line)
        for m in re.finditer(r"\[[^\]]*\]\(([^)\s]+)\)", line):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target):
                continue
            n += 1
            file, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file \
                else path
            if not os.path.exists(dest):
                bad.append("%s:%d: %s does not exist" % (name, ln, target))
            elif frag and dest.endswith(".md") and frag not in anchors(dest):
                bad.append("%s:%d: %s has no heading #%s" % (name, ln, file or name, frag))
    return bad, n


def check_links(path):
    name = os.path.relpath(path, SOURCE_ROOT)
    bad, n = link_problems(path)
    tap.ok(not bad, "%s: its %d relative links resolve" % (name, n), "\n".join(bad))


def check_link_harness():
    """The link check can fail: a missing file and a missing heading are found."""
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "a.md"), "w") as f:
            f.write("# Top\n## Two words\n[x](b.md) [y](a.md#two-words) [z](a.md#three)\n"
                    "[w](#top) [v](https://example.com/none)\n")
        bad, n = link_problems(os.path.join(d, "a.md"))
    tap.ok(n == 4 and len(bad) == 2 and "b.md does not exist" in bad[0]
           and "#three" in bad[1], "the link check finds a missing file and a missing anchor",
           "\n".join(bad))


# ---- quoted log lines ------------------------------------------------------------------

CONVERSION = re.compile(r"%[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?"
                        r"[diouxXeEfgGcsp]")


def c_strings(text):
    """The string literals of a C file, adjacent ones joined, comments skipped."""
    out, cur, i, n, last_end = [], None, 0, len(text), -1
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            i = text.find("*/", i + 2)
            i = n if i < 0 else i + 2
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif c == "'":
            m = re.match(r"'(?:[^'\\]|\\.)*'", text[i:])
            i += len(m.group(0)) if m else 1
        elif c == '"':
            m = re.match(r'"((?:[^"\\\n]|\\.)*)"', text[i:])
            if not m:
                i += 1
                continue
            lit = re.sub(r"\\(.)", lambda e: {"n": "\n", "t": "\t"}.get(e.group(1), e.group(1)),
                         m.group(1))
            if cur is not None and text[last_end:i].strip() == "":
                cur += lit
            else:
                if cur is not None:
                    out.append(cur)
                cur = lit
            i += len(m.group(0))
            last_end = i
        else:
            i += 1
    if cur is not None:
        out.append(cur)
    return out


def source_formats():
    """Every format string of the sources with a word in it, as its literal pieces."""
    formats = []
    for root, dirs, files in os.walk(SOURCE_ROOT):
        dirs[:] = [d for d in dirs if d not in ("tests", ".git") and not d.startswith("build")]
        for f in files:
            if f.endswith(".c"):
                with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
                    for lit in c_strings(fh.read()):
                        pieces = [p.replace("%%", "%") for p in CONVERSION.split(lit)]
                        if re.search(r"[A-Za-z]{3}", lit):
                            formats.append(pieces)
    return formats


def plain_run(text):
    """The longest run of plain words (letters only, punctuation around them stripped)."""
    best = run_ = 0
    for t in text.split():
        t = re.sub(r"^[(\[\"']+|[)\]\"':;,.?]+$", "", t)
        run_ = run_ + 1 if re.fullmatch(r"[A-Za-z]+", t) else 0
        best = max(best, run_)
    return best


def partial(lit, suffix):
    """Regex of the non-empty suffixes (prefixes) of lit cut at a word boundary."""
    cuts = [p for p in range(len(lit) + 1)
            if p in (0, len(lit)) or not (lit[p - 1].isalnum() and lit[p].isalnum())]
    parts = {lit[p:] for p in cuts} if suffix else {lit[:p] for p in cuts}
    parts.discard("")
    return "(?:%s)" % "|".join(re.escape(x) for x in sorted(parts, key=len, reverse=True))


FORMATS = None
ALL_LITERALS = ""
WHOLE_LITERALS = set()
PATTERN_CACHE = {}


def formats():
    global FORMATS, ALL_LITERALS
    if FORMATS is None:
        FORMATS = source_formats()
        ALL_LITERALS = "\0".join(p for f in FORMATS for p in f)
        WHOLE_LITERALS.update(p.strip(" \t\n:;,.") for f in FORMATS for p in f)
    return FORMATS


def format_patterns(fi, i, j):
    """Regexes for the literals i..j of format fi: the first and last possibly cut at a
    word boundary, or whole with text (captured) before or after: a conversion's value, or
    what the program printed next to it."""
    key = (fi, i, j)
    if key not in PATTERN_CACHE:
        pieces = FORMATS[fi]
        lits = pieces[i:j + 1]
        if i == j:
            lit = re.escape(lits[0])
            PATTERN_CACHE[key] = [re.compile(x, re.S) for x in (
                "(.+?)" + lit, lit + "(.+?)", "(.+?)" + lit + "(.+?)",
                "(.+?)" + partial(lits[0], False), partial(lits[0], True) + "(.+?)")]
            return PATTERN_CACHE[key]
        mids = "".join("(.+?)" + re.escape(x) for x in lits[1:-1]) + "(.+?)"
        leads = [partial(lits[0], True), "(.+?)" + re.escape(lits[0])] if lits[0] else [""]
        trails = [partial(lits[-1], False), re.escape(lits[-1]) + "(.+?)"] if lits[-1] \
            else [""]
        PATTERN_CACHE[key] = [re.compile(a + mids + b, re.S) for a in leads for b in trails]
    return PATTERN_CACHE[key]


def plain_token(tok):
    return bool(re.fullmatch(r"[A-Za-z]+", re.sub(r"^[(\[\"']+|[)\]\"':;,.?]+$", "", tok)))


def attached(text, start, end):
    """Whether the captured text[start:end] continues a run of plain words of the text
    around it: such a value (a word in a sentence) must itself be a literal."""
    inner = text[start:end].split()
    before, after = text[:start].split(), text[end:].split()
    if not inner:
        return False
    return (plain_token(inner[0]) and bool(before) and plain_token(before[-1])
            and text[start - 1:start].isspace() + text[start:start + 1].isspace() > 0) or \
        (plain_token(inner[-1]) and bool(after) and plain_token(after[0])
         and text[end - 1:end].isspace() + text[end:end + 1].isspace() > 0)


def explained(text, depth=0, need=3):
    """True when text has no run of `need` plain words, lies inside one literal of the
    sources, or is an instance of a run of a format's literals whose conversions hold
    text that is explained in turn: values of two plain words or more, or one that
    continues a sentence of the literal, must be literals themselves."""
    text = text.strip(" \t\n:;,.")
    if plain_run(text) < need:
        return True
    formats()
    if text in WHOLE_LITERALS or (need > 1 and text in ALL_LITERALS):
        return True
    if depth > 3:
        return False
    for fi, pieces in enumerate(FORMATS):
        # A quote spanning literals i..j contains every literal strictly inside.
        hits = [x for x, p in enumerate(pieces) if len(p) >= 4 and p in text]
        if not hits:
            continue
        k = len(pieces)
        for i in range(0, max(hits) + 1):
            for j in range(max(i, min(hits)), k):
                if any(pieces[x] not in text for x in range(i + 1, j)):
                    continue
                for pat in format_patterns(fi, i, j):
                    m = pat.fullmatch(text)
                    if m and all(explained(m.group(g), depth + 1,
                                           1 if attached(text, m.start(g), m.end(g)) else 2)
                                 for g in range(1, len(m.groups()) + 1)):
                        return True
    return False


def log_quotes(path):
    _, prose = parse(path)
    for n, line in prose:
        for span in re.findall(r"`([^`]+)`", line):
            first = span.split()[0]
            if plain_run(span) < 3 or first in COMMANDS or span.startswith(FOREIGN_MESSAGES):
                continue
            yield n, span


def quote_problems(path):
    name = os.path.relpath(path, SOURCE_ROOT)
    bad, n = [], 0
    for ln, span in log_quotes(path):
        n += 1
        if not all(explained(piece) for piece in span.split("...")):
            bad.append("%s:%d: %s" % (name, ln, span))
    return bad, n


def check_quotes(path):
    name = os.path.relpath(path, SOURCE_ROOT)
    bad, n = quote_problems(path)
    tap.ok(not bad, "%s: its %d quoted log lines are formats of the sources" % (name, n),
           "not found in the sources:\n" + "\n".join(bad))


def check_quote_harness():
    """The quote check can fail: a reworded message and an invented one are found, the real
    ones (composed, elided, with example values) pass."""
    text = ("`registered rdma.example/ib with the kubelet (...)` "
            "`config /e/c.yaml rejected, the previous config stays in force: /e/c.yaml:4:7: "
            "pools[0].selectors: unknown key \"vendor\" (did you mean vendors?)`\n"
            "`registered rdma.example/ib at the kubelet now` `the bridge exploded loudly`\n")
    with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
        f.write(text)
    try:
        bad, n = quote_problems(f.name)
    finally:
        os.unlink(f.name)
    tap.ok(n == 4 and len(bad) == 2 and all(":2:" in b for b in bad),
           "the log-line check finds a reworded and an invented message, and passes real ones",
           "\n".join(bad))


# ---- commands, figures, retracted claims ----------------------------------------------

def code_texts(path):
    """(line number, text) of each code line (not json/toml/yaml) and inline code span."""
    blocks, prose = parse(path)
    for lang, start, text in blocks:
        if lang in ("json", "toml", "yaml"):
            continue
        for i, line in enumerate(text.replace("\\\n", " ").splitlines()):
            yield start + i, line.partition(" #")[0]
    for n, line in prose:
        for span in re.findall(r"`([^`]+)`", line):
            yield n, span


def usage_words(text, prog):
    """The subcommands a usage text lists: `Usage: PROG SUB` lines and the Commands list."""
    subs = set(re.findall(r"^\s*(?:Usage:)?\s*\S*%s (\w[\w-]*)" % re.escape(prog), text, re.M))
    if "Commands:\n" in text:
        block = text.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
        subs |= {line.split()[0] for line in block.splitlines() if line.strip()}
    return subs


def command_problems(path, known):
    bad, n = [], 0
    # A command word where a command starts (a line, after | && ; $( or sudo), with or
    # without a directory (build/rdma-cdi).
    cmd_re = re.compile(r"(?:^|[|;&(]|\bsudo)\s*(?:[\w./-]*/)?(rdma-cdi config|rdma-cdi-node|"
                        r"rdma-cdi) ([a-z][a-z-]*)(?=\s|$)")
    path_re = re.compile(r"(?:^|(?<=[\s=]))((?:deploy|tests|docs|\.ci)/[\w./-]*[\w/])")
    for line, text in code_texts(path):
        for m in cmd_re.finditer(text):
            n += 1
            prog, word = m.group(1), m.group(2)
            if prog == "rdma-cdi" and word == "config":
                continue
            if word not in known.get(prog, ()):
                bad.append("%s:%d: %s %s is no command of %s" % (os.path.basename(path), line,
                                                                prog, word, prog))
        for m in path_re.finditer(text):
            n += 1
            if not os.path.exists(os.path.join(SOURCE_ROOT, m.group(1))):
                bad.append("%s:%d: %s does not exist" % (os.path.basename(path), line,
                                                         m.group(1)))
    return n, bad


def known_commands():
    known = {"rdma-cdi": set(HELPS)}
    _, out, err = run(RDMA_CDI, "config", "--help")
    known["rdma-cdi config"] = usage_words(out + err, "rdma-cdi config")
    node = other_help("rdma-cdi-node")
    if node is not None:
        known["rdma-cdi-node"] = usage_words(node, "rdma-cdi-node")
    return known


def check_commands(path, known):
    n, bad = command_problems(path, known)
    tap.ok(not bad, "%s: its %d commands and repository paths exist" % (
        os.path.basename(path), n), "\n".join(bad))


def c_constant(header, name, depth=0):
    """The value of `#define NAME EXPR` in header (EXPR of integers, + - * / and other
    defines of that header), or None."""
    with open(os.path.join(SOURCE_ROOT, header)) as f:
        text = f.read()
    m = re.search(r"^#define %s\s+(.+?)\s*(?:/\*.*)?$" % name, text, re.M)
    if not m or depth > 4:
        return None
    expr = re.sub(r"\b[A-Z_][A-Z0-9_]*\b",
                  lambda t: str(c_constant(header, t.group(0), depth + 1)), m.group(1))
    return eval(expr, {"__builtins__": {}}) if re.fullmatch(r"[\d\s+*/()-]+", expr) else None


def figure_docs():
    return sorted({p for g in FIGURE_DOCS for p in glob.glob(os.path.join(SOURCE_ROOT, g))})


def check_figures():
    docs = figure_docs()
    for what, regex, header, name in FIGURES:
        want = c_constant(header, name)
        seen, bad = 0, []
        for path in docs:
            with open(path, encoding="utf-8") as f:
                text = " ".join(f.read().split())
            for m in re.finditer(regex, text):
                seen += 1
                got = int(next(g for g in m.groups() if g).replace(",", ""))
                if got != want:
                    bad.append("%s: %r says %d" % (os.path.relpath(path, SOURCE_ROOT),
                                                  m.group(0), got))
        tap.ok(want is not None and seen and not bad, "%s: the docs say %s, as %s's %s (%d "
               "places)" % (what, want, header, name, seen), "\n".join(bad) or "not found")


def check_retracted():
    docs = figure_docs()
    for phrase, why in RETRACTED:
        found = []
        for path in docs:
            with open(path, encoding="utf-8") as f:
                if phrase in " ".join(f.read().split()):
                    found.append(os.path.relpath(path, SOURCE_ROOT))
        tap.ok(not found, "no doc says %r again (%s)" % (phrase, why), found)


def check_command_harness():
    with tempfile.NamedTemporaryFile("w", suffix=".md", dir=GUIDES_DIR) as f:
        f.write("```sh\nrdma-cdi discover\nrdma-cdi frobnicate\nrdma-cdi config check x\n"
                "rdma-cdi config fix x\nkubectl apply -k deploy/kubernetes/nope\n```\n"
                "`kubectl apply -k deploy/kubernetes`\n")
        f.flush()
        n, bad = command_problems(f.name, known_commands())
    tap.ok(n == 6 and len(bad) == 3 and "frobnicate" in bad[0] and "fix" in bad[1] and
           "nope" in bad[2], "the command check finds an unknown command and subcommand "
           "and a missing path (harness)", "%d %s" % (n, bad))


def check_readme():
    readme = os.path.join(SOURCE_ROOT, "README.md")
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    targets = re.findall(r"\]\((docs/guides/[^)\s]*)\)", text)
    ok = any(os.path.exists(os.path.join(SOURCE_ROOT, t.partition("#")[0])) for t in targets)
    tap.ok(ok, "README.md links to docs/guides/", "links found: %s" % targets)


def main():
    paths = guides()
    tap.ok(len(paths) >= 8, "docs/guides/ has the guides", "found: %s" % paths)
    check_config_harness()
    check_flag_harness()
    check_link_harness()
    check_quote_harness()
    check_command_harness()
    known = known_commands()
    n_configs = 0
    for path in paths:
        check_commands(path, known)
        check_flags(path)
        n_configs += check_blocks(path)
        check_links(path)
        check_quotes(path)
    tap.ok(n_configs > 0, "the guides' rdma-cdi configs were found and checked (%d)" % n_configs)
    check_readme()
    check_figures()
    check_retracted()
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
