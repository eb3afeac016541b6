#!/usr/bin/python3
"""Runs the code blocks of README.md and docs/*.md as written (ctest -L docs).

Every fenced block of a Markdown file is found with its file and line, and, by its language:

  sh, bash, shell, console   commands: run with bash from the repository root (so build/bin/...
                             works), `set -e`, in the environment of a fresh shell after
                             `make build` (no TUTTI_*, RANK, PYTHONPATH... inherited)
  c, cpp                     a program (it has a main, or its statements are put into one with the
                             standard headers and tutti.h / tutti.hpp): compiled against the build
                             tree and run under `build/bin/tuttirun -np 2`
  python                     a program: run with Debian's /usr/bin/python3 and build/python on
                             PYTHONPATH, under `build/bin/tuttirun -np 2` when it uses tutti
  anything else              (text, yaml, cmake, unlabelled) not run

A block runs unless the line(s) just above its fence hold a marker, an HTML comment that a
rendered page does not show:

  <!-- doc-test: skip: REASON -->                 not run, and REASON says why (required)
  <!-- doc-test: skip lines 1,3-4: REASON -->     commands: these lines of the block (counted from
                                                  1; a line ending in a backslash takes its
                                                  continuation along) are not run, the rest is
  <!-- doc-test: slow: REASON -->                 run only with --slow (TUTTI_DOC_TEST_SLOW=1):
                                                  benchmarks, too long for every ctest (their
                                                  timeout is 600 s unless a marker says)
  <!-- doc-test: fragment -->                     part of a larger program, not run. C and C++
                                                  fragments are compiled (-fsyntax-only) inside a
                                                  function after tests/docs/prelude.h(pp), which
                                                  declares the names they leave to the reader;
                                                  Python fragments are compiled (syntax)
  <!-- doc-test: output -->                       sample output, not run
  <!-- doc-test: timeout 300 -->                  seconds this block may take (default 120)
  <!-- doc-test: in slurm -->                     commands: run inside a one-host Slurm of their
                                                  own (tests/integration/slurm/slurm.sh, as root),
                                                  so that salloc, srun and sbatch work as written
  <!-- doc-test: needs PATH-OR-COMMAND... -->     skipped, saying so, where one is missing (a ~/
                                                  path, a path from the repository root, or a
                                                  command on PATH)

Several markers may stand on consecutive lines above one fence. A marker that is malformed, stands
anywhere else, or a skip without its reason fails the run (the same check alone: --check).

As root, the run has an empty /tmp of its own (a mount namespace with a tmpfs there; folders of
the run that lie under /tmp stay visible), so that the checkpoints, logs and CSVs the docs write
under /tmp start fresh and go with it.

The exit status is 0 when every block that ran passed, 1 when one failed (with file:line, the block
and the tail of its output) or a marker is wrong, and 77 when every block of the files was skipped.
Run by hand from the repository root:

    tests/docs/doc_blocks.py README.md docs/LAUNCHING.md     # run these files' blocks
    tests/docs/doc_blocks.py --list README.md docs/*.md      # what would run, and every skip
    tests/docs/doc_blocks.py --slow --only 68 docs/PERFORMANCE.md   # the block whose fence is
                                                                    # on line 68
"""

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_TIMEOUT = 120
SLOW_TIMEOUT = 600
COMPILE_TIMEOUT = 300
NP = 2  # ranks for the C, C++ and Python programs
PYTHON = "/usr/bin/python3"  # the Python the build's package is for (the docs name it)
TAIL_LINES = 60

COMMAND_LANGS = {"sh", "bash", "shell", "console"}
C_LANGS = {"c": "c", "cpp": "cpp", "c++": "cpp", "cxx": "cpp", "cc": "cpp"}
PYTHON_LANGS = {"python", "python3", "py"}

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`]*)$")
MARKER = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<body>.*?)\s*-->\s*$")
LOOSE_MARKER = re.compile(r"<!--\s*doc[-_ ]?test", re.IGNORECASE)
MAIN = re.compile(r"\bint\s+main\s*\(")

# What a rank, a launcher or a job leaves in an environment: a user's fresh shell has none of it.
SCRUB_PREFIXES = ("TUTTI_", "OMPI_", "PMIX_", "PMI_", "PRTE_", "SLURM_", "HYDRA_", "I_MPI_",
                  "TORCHELASTIC_", "NCCL_", "GLOO_")
SCRUB_NAMES = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
               "GROUP_WORLD_SIZE", "ROLE_RANK", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
               "PYTHONPATH", "OMP_NUM_THREADS"}


@dataclass
class Block:
    path: str  # as shown: relative to the repository root
    line: int  # the opening fence's line, 1-based
    lang: str
    lines: list  # the content, indentation of the fence removed
    kind: str = "none"  # command, c, cpp, python, none
    skip: str = None  # reason
    skip_lines: set = field(default_factory=set)
    skip_lines_reason: str = None
    slow: str = None
    fragment: bool = False
    output: bool = False
    timeout: int = None  # seconds; None: the default (600 for a slow block)
    needs: list = field(default_factory=list)
    in_slurm: bool = False

    @property
    def where(self):
        return f"{self.path}:{self.line}"

    @property
    def text(self):
        return "\n".join(self.lines) + "\n"


def parse_line_spec(spec):
    numbers = set()
    for part in spec.replace(" ", "").split(","):
        if not part:
            continue
        if "-" in part:
            first, last = part.split("-", 1)
            numbers.update(range(int(first), int(last) + 1))
        else:
            numbers.add(int(part))
    return numbers


def apply_marker(block, body, errors, where):
    """Sets what one marker says on block; appends to errors what is wrong with it."""
    m = re.fullmatch(r"skip\s+lines?\s+([0-9][0-9,\s-]*?)\s*:\s*(.*)", body)
    if m:
        if not m.group(2).strip():
            errors.append(f"{where}: `skip lines` needs a reason: "
                          "<!-- doc-test: skip lines N: REASON -->")
        try:
            block.skip_lines |= parse_line_spec(m.group(1))
        except ValueError:
            errors.append(f"{where}: bad line list {m.group(1)!r} in a `skip lines` marker")
        block.skip_lines_reason = m.group(2).strip()
        return
    m = re.fullmatch(r"(skip|slow)\s*(?::\s*(.*))?", body)
    if m:
        reason = (m.group(2) or "").strip()
        if not reason:
            errors.append(f"{where}: `{m.group(1)}` needs a reason: "
                          f"<!-- doc-test: {m.group(1)}: REASON -->")
        setattr(block, m.group(1), reason or "(no reason given)")
        return
    if re.fullmatch(r"fragment(\s*:.*)?", body):
        block.fragment = True
        return
    if body == "output":
        block.output = True
        return
    if body == "in slurm":
        block.in_slurm = True
        return
    m = re.fullmatch(r"timeout\s+(\d+)", body)
    if m and int(m.group(1)) > 0:
        block.timeout = int(m.group(1))
        return
    m = re.fullmatch(r"needs\s+(.+)", body)
    if m:
        block.needs += m.group(1).split()
        return
    errors.append(f"{where}: unknown doc-test marker {body!r} (skip: REASON, skip lines N: REASON, "
                  "slow: REASON, fragment, output, timeout N, needs X, in slurm)")


def parse_file(path, shown, default_timeout=DEFAULT_TIMEOUT):
    """Returns (blocks, errors) of one Markdown file."""
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    blocks, errors = [], []
    used_markers = set()
    inside = set()  # the lines of code blocks, where a marker is an example
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or (m.group("fence")[0] == "`" and "`" in m.group("info")):
            i += 1
            continue
        indent = len(m.group("indent").expandtabs())
        fence = m.group("fence")
        info = m.group("info").strip()
        lang = info.split()[0].lower() if info else ""
        j = i + 1
        close = re.compile(r"^[ \t]*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$")
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        inside.update(range(i, j + 1))
        content = []
        for text in lines[i + 1:j]:
            stripped = text.expandtabs()
            k = 0
            while k < indent and k < len(stripped) and stripped[k] == " ":
                k += 1
            content.append(stripped[k:])
        block = Block(path=shown, line=i + 1, lang=lang, lines=content)
        if lang in COMMAND_LANGS:
            block.kind = "command"
        elif lang in C_LANGS:
            block.kind = C_LANGS[lang]
        elif lang in PYTHON_LANGS:
            block.kind = "python"
        # The markers: consecutive comment lines right above the fence.
        k = i - 1
        while k >= 0 and MARKER.match(lines[k]):
            used_markers.add(k)
            apply_marker(block, MARKER.match(lines[k]).group("body"), errors, f"{shown}:{k + 1}")
            k -= 1
        if block.timeout is None:
            block.timeout = max(SLOW_TIMEOUT, default_timeout) if block.slow else default_timeout
        kinds = [name for name, on in (("skip", block.skip), ("slow", block.slow),
                                       ("fragment", block.fragment), ("output", block.output)) if on]
        if len(kinds) > 1:
            errors.append(f"{block.where}: markers {', '.join(kinds)} contradict each other")
        if block.skip_lines and block.kind != "command":
            errors.append(f"{block.where}: `skip lines` is for command blocks (sh, bash)")
        if block.in_slurm and block.kind != "command":
            errors.append(f"{block.where}: `in slurm` is for command blocks (sh, bash)")
        if block.skip_lines and max(block.skip_lines) > len(content):
            errors.append(f"{block.where}: `skip lines` names line {max(block.skip_lines)} of a block "
                          f"of {len(content)}")
        if block.fragment and block.kind not in ("c", "cpp", "python"):
            errors.append(f"{block.where}: `fragment` is for C, C++ and Python blocks")
        blocks.append(block)
        i = j + 1
    for n, text in enumerate(lines):
        if n in used_markers or n in inside:
            continue
        text = re.sub(r"`[^`]*`", "", text)  # a marker quoted in inline code is prose
        if MARKER.match(text):
            errors.append(f"{shown}:{n + 1}: a doc-test marker must stand right above a code fence")
        elif LOOSE_MARKER.search(text):
            errors.append(f"{shown}:{n + 1}: malformed doc-test marker (<!-- doc-test: ... --> on a "
                          "line of its own)")
    return blocks, errors


# ---------------------------------------------------------------------------------------------
# Running


class Runner:
    def __init__(self, args):
        self.source = Path(args.source).resolve()
        self.build = Path(args.build).resolve()
        self.work = Path(args.work).resolve()
        self.slow = args.slow or os.environ.get("TUTTI_DOC_TEST_SLOW") == "1"
        self.verbose = args.verbose
        self.flags = self.load_flags()
        self.root = self.make_root()
        self.env = self.fresh_env()
        self.results = []  # (block, status, detail); status: pass fail skip slow fragment output

    def load_flags(self):
        """The compilers and flags for C/C++ blocks: what CMake wrote (tests/docs/CMakeLists.txt),
        else what a build tree at the usual places offers."""
        flags_file = self.build / "tests" / "docs" / "doc_flags.json"
        if flags_file.exists():
            return json.loads(flags_file.read_text())
        return {"cc": shutil.which("cc") or "cc", "cxx": shutil.which("c++") or "c++",
                "tutti_include": str(self.source / "runtime" / "include"),
                "libtutti": str(self.build / "lib" / "libtutti.so"), "torch": None}

    def make_root(self):
        """The folder blocks run in: the repository root when the build is its build/, else a
        folder of links to the repository's entries with build/ pointing at the build tree."""
        if (self.source / "build").resolve() == self.build:
            return self.source
        root = self.work / "tree"
        root.mkdir(parents=True)
        for entry in self.source.iterdir():
            if entry.name != "build":
                (root / entry.name).symlink_to(entry)
        (root / "build").symlink_to(self.build)
        return root

    def fresh_env(self):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(SCRUB_PREFIXES) and k not in SCRUB_NAMES}
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in the source tree
        return env

    # -- helpers

    def log_path(self, block, suffix=".log"):
        return self.work / f"{Path(block.path).stem}_L{block.line}{suffix}"

    def execute(self, argv, log, timeout, env=None):
        """Runs argv in the block folder, its output to log; returns (status, seconds, timed_out)."""
        start = time.monotonic()
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, cwd=self.root, env=env or self.env, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
            try:
                status = proc.wait(timeout=timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                timed_out = True
                for sig, grace in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
                    try:
                        os.killpg(proc.pid, sig)
                    except ProcessLookupError:
                        pass
                    try:
                        proc.wait(timeout=grace)
                        break
                    except subprocess.TimeoutExpired:
                        continue
                status = proc.returncode if proc.returncode is not None else -9
        return status, time.monotonic() - start, timed_out

    def missing_needs(self, block):
        missing = []
        for need in block.needs:
            if "/" in need:
                path = Path(os.path.expanduser(need))
                if not path.is_absolute():
                    path = self.root / path
                if not path.exists():
                    missing.append(need)
            elif shutil.which(need, path=self.env.get("PATH")) is None:
                missing.append(need)
        return missing

    def record(self, block, status, detail=""):
        self.results.append((block, status, detail))
        label = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP", "slow": "SLOW", "fragment": "FRAG",
                 "output": "----", "none": "----"}[status]
        if status in ("output", "none") and not self.verbose:
            return
        print(f"{label} {block.where} ({block.lang or 'unlabelled'}){': ' + detail if detail else ''}",
              flush=True)

    def fail(self, block, what, log=None, source=None):
        print(f"\nFAIL {block.where}: {what}", flush=True)
        print(f"--- the block ({block.path}, from line {block.line + 1}):")
        for n, text in enumerate(block.lines, start=block.line + 1):
            print(f"{n:5} | {text}")
        if log is not None and Path(log).exists():
            tail = Path(log).read_text(errors="replace").splitlines()[-TAIL_LINES:]
            print(f"--- the last {len(tail)} lines of its output ({log}):")
            for text in tail:
                print(f"      {text}")
        if source is not None:
            print(f"--- the program compiled: {source}")
        print("---", flush=True)
        self.results.append((block, "fail", what))

    # -- the kinds

    def run_block(self, block):
        if block.kind == "none" or block.output:
            self.record(block, "output" if block.output else "none")
            return
        if block.skip:
            self.record(block, "skip", block.skip)
            return
        if block.slow and not self.slow:
            self.record(block, "slow", block.slow)
            return
        missing = self.missing_needs(block)
        if missing:
            self.record(block, "skip", f"needs {', '.join(missing)}, which this machine lacks")
            return
        if block.kind == "command":
            self.run_command(block)
        elif block.kind == "python":
            self.run_python(block)
        else:
            self.run_c(block)

    def run_command(self, block):
        lines = list(block.lines)
        skipped = set()
        for n in sorted(block.skip_lines):
            k = n - 1
            while k < len(lines) and k not in skipped:
                skipped.add(k)
                if not lines[k].rstrip().endswith("\\"):
                    break
                k += 1
        if block.lang == "console":  # `$ command` lines; the rest is output
            lines = [text[2:] if text.startswith("$ ") else "" for text in lines]
        body = [("" if k in skipped else text) for k, text in enumerate(lines)]
        # The script's line 2 is the block's first line: name the doc's line of a failing command.
        failed = f"doc-test: the command at {block.path.replace(chr(39), '')}:$((LINENO + " \
                 f"{block.line - 1})) failed with status $?"
        head = ["set -e", f"trap 'echo \"{failed}\" >&2' ERR"]
        if block.in_slurm:
            # slurm.sh: re-run this script in namespaces of its own (exit 77 where it cannot), then
            # a one-host Slurm whose SLURM_CONF salloc, srun and sbatch read, stopped on exit.
            head += ["source tests/integration/slurm/slurm.sh", "slurm_private_world",
                     "trap slurm_down EXIT",
                     f"slurm_up {shlex.quote(str(self.log_path(block, '.slurm')))}"]
        script = self.log_path(block, ".sh")
        script.write_text("; ".join(head) + "\n" + "\n".join(body) + "\n")
        log = self.log_path(block)
        status, seconds, timed_out = self.execute(["bash", str(script)], log, block.timeout)
        if block.in_slurm and status == 77 and not timed_out:
            said = [t[5:].strip() for t in Path(log).read_text(errors="replace").splitlines()
                    if t.startswith("SKIP:")]
            self.record(block, "skip", "no Slurm here: " + (said[-1] if said else "exit 77"))
        elif timed_out:
            self.fail(block, f"timed out after {block.timeout} s (a longer one: "
                             "<!-- doc-test: timeout N -->)", log)
        elif status != 0:
            self.fail(block, f"exit status {status} after {seconds:.1f} s", log)
        else:
            note = f"{seconds:.1f} s"
            if skipped:
                note += f", lines {format_lines(block.skip_lines)} not run: {block.skip_lines_reason}"
            self.record(block, "pass", note)

    def run_python(self, block):
        if block.fragment:
            try:
                compile(block.text, block.where, "exec")
            except SyntaxError as e:
                line = block.line + (e.lineno or 0)
                self.fail(block, f"a syntax error at {block.path}:{line}: {e.msg}")
                return
            self.record(block, "fragment", "syntax checked")
            return
        if not (self.root / "build" / "python" / "tutti").is_dir():
            self.record(block, "skip", "needs build/python/tutti: this build has no Python package")
            return
        script = self.log_path(block, ".py")
        script.write_text(block.text)
        env = dict(self.env, PYTHONPATH=str(self.root / "build" / "python"))
        argv = [PYTHON, str(script)]
        if re.search(r"\btutti\b", block.text):
            argv = [str(self.root / "build" / "bin" / "tuttirun"), "-np", str(NP), "--"] + argv
        log = self.log_path(block)
        status, seconds, timed_out = self.execute(argv, log, block.timeout, env)
        if timed_out or status != 0:
            what = f"timed out after {block.timeout} s" if timed_out else f"exit status {status}"
            self.fail(block, f"{what} ({' '.join(shlex.quote(a) for a in argv)})", log)
        else:
            how = f"tuttirun -np {NP}" if "tuttirun" in argv[0] else "python3"
            self.record(block, "pass", f"{seconds:.1f} s, {how}")

    def uses_torch(self, block):
        return bool(re.search(r"\btorch(::|x\b|/)|tutti/torch", block.text))

    def compile_argv(self, block, source, output, syntax_only):
        flags = self.flags
        torch = self.uses_torch(block)
        if block.kind == "c":
            argv = [flags["cc"], "-std=c11"]
        else:
            argv = [flags["cxx"], "-std=c++20"]
        argv += ["-I", flags["tutti_include"], "-I", str(Path(__file__).resolve().parent)]
        if torch:
            t = flags["torch"]
            argv += ["-I", t["binding_include"]]
            for d in t["include"]:
                if d not in ("/usr/include", "/usr/local/include"):  # the compiler's own: -isystem
                    argv += ["-isystem", d]                          # would break #include_next
            argv += t["cxx_flags"]
        if syntax_only:
            return argv + ["-fsyntax-only", str(source)]
        argv += [str(source), "-o", str(output)]
        libdir = str(Path(flags["libtutti"]).parent)
        if torch:
            t = flags["torch"]
            argv += [t["libtutti_torch"], "-L", t["lib_dir"], "-Wl,-rpath," + t["lib_dir"]]
            argv += ["-l" + lib for lib in t["libs"]]
        return argv + [flags["libtutti"], "-Wl,-rpath," + libdir]

    def run_c(self, block):
        torch = self.uses_torch(block)
        if torch and not self.flags.get("torch"):
            self.record(block, "skip", "uses libtorch, and this build has no libtutti_torch")
            return
        ext = ".c" if block.kind == "c" else ".cc"
        source = self.log_path(block, ext)
        has_main = bool(MAIN.search(block.text))
        if block.fragment:
            source.write_text(self.fragment_source(block, has_main))
        elif has_main:
            source.write_text(f'#line {block.line + 1} "{block.path}"\n' + block.text)
        else:
            source.write_text(self.wrapped_program(block))
        log = self.log_path(block, ".compile.log")
        program = self.log_path(block, ".bin")
        argv = self.compile_argv(block, source, program, syntax_only=block.fragment)
        status, seconds, timed_out = self.execute(argv, log, COMPILE_TIMEOUT)
        if timed_out or status != 0:
            self.fail(block, "does not compile" + (" (timed out)" if timed_out else "") + ": "
                      + " ".join(shlex.quote(a) for a in argv), log, source)
            return
        if block.fragment:
            prelude = "prelude_torch.hpp" if torch else \
                ("prelude.h" if block.kind == "c" else "prelude.hpp")
            self.record(block, "fragment", f"compiled in {seconds:.1f} s after tests/docs/{prelude}")
            return
        argv = [str(self.root / "build" / "bin" / "tuttirun"), "-np", str(NP), "--", str(program)]
        log = self.log_path(block)
        status, run_seconds, timed_out = self.execute(argv, log, block.timeout)
        if timed_out or status != 0:
            what = f"timed out after {block.timeout} s" if timed_out else f"exit status {status}"
            self.fail(block, f"{what} under tuttirun -np {NP}", log, source)
        else:
            self.record(block, "pass", f"compiled in {seconds:.1f} s, ran in {run_seconds:.1f} s "
                                       f"under tuttirun -np {NP}")

    def split_includes(self, block):
        includes, body = [], []
        for n, text in enumerate(block.lines, start=block.line + 1):
            if text.lstrip().startswith("#include"):
                includes.append(f'#line {n} "{block.path}"\n{text}')
                body.append("")
            else:
                body.append(text)
        return includes, body

    def wrapped_program(self, block):
        """A block of statements, put into main() as its reader would: the standard headers and
        tutti's, then the block."""
        includes, body = self.split_includes(block)
        if block.kind == "c":
            head = ["#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
                    "#include <tutti/tutti.h>"]
        else:
            head = ["#include <cstdint>", "#include <cstdio>", "#include <span>", "#include <string>",
                    "#include <vector>", "#include <tutti/tutti.hpp>"]
        main = "int main(void) {" if block.kind == "c" else "int main() {"
        return "\n".join(head + includes + [main, f'#line {block.line + 1} "{block.path}"'] + body
                         + ["}"]) + "\n"

    def fragment_source(self, block, has_main):
        if self.uses_torch(block):
            prelude = "prelude_torch.hpp"
        else:
            prelude = "prelude.h" if block.kind == "c" else "prelude.hpp"
        if has_main:  # a whole file that leaves names to the reader
            return f'#include "{prelude}"\n#line {block.line + 1} "{block.path}"\n' + block.text
        includes, body = self.split_includes(block)
        signature = f"void doc_block_line_{block.line}(void)" if block.kind == "c" else \
            f"void doc_block_line_{block.line}()"
        return "\n".join([f'#include "{prelude}"'] + includes + [
            signature + " {", f'#line {block.line + 1} "{block.path}"'] + body + ["}"]) + "\n"


def format_lines(numbers):
    return ",".join(str(n) for n in sorted(numbers))


def summarize(results, files):
    counts = {}
    for block, status, _ in results:
        counts.setdefault(block.path, {}).setdefault(status, 0)
        counts[block.path][status] += 1
    print("\nSummary:")
    for f in files:
        c = counts.get(f, {})
        parts = [f"{c.get('pass', 0)} ran and passed"]
        if c.get("fail"):
            parts.append(f"{c['fail']} FAILED")
        if c.get("fragment"):
            parts.append(f"{c['fragment']} fragments compiled")
        if c.get("skip"):
            parts.append(f"{c['skip']} skipped")
        if c.get("slow"):
            parts.append(f"{c['slow']} slow, not run (--slow runs them)")
        quiet = c.get("output", 0) + c.get("none", 0)
        if quiet:
            parts.append(f"{quiet} not code (output, text, yaml, cmake)")
        print(f"  {f}: " + ", ".join(parts))
    by_reason = {}
    for block, status, detail in results:
        if status in ("skip", "slow"):
            by_reason.setdefault((status, detail), []).append(block.where)
        if status == "pass" and block.skip_lines:
            by_reason.setdefault(("lines", block.skip_lines_reason), []).append(
                f"{block.where} (lines {format_lines(block.skip_lines)})")
    if by_reason:
        print("Not run, by reason:")
        for (status, reason), wheres in sorted(by_reason.items()):
            kind = {"skip": "skip", "slow": "slow", "lines": "skip lines"}[status]
            print(f"  [{kind}] {reason}")
            for where in wheres:
                print(f"      {where}")
    failed = [(b, d) for b, s, d in results if s == "fail"]
    if failed:
        print("Failed:")
        for block, detail in failed:
            print(f"  {block.where}: {detail}")


def enter_private_tmp(keep):
    """Re-runs this script in a mount namespace of its own with an empty /tmp (a tmpfs), so that
    the /tmp paths the docs write (checkpoints, logs, CSVs) start empty and leave nothing behind,
    and two runs never share them. Folders under /tmp this run needs (the build tree...) stay
    visible. Without the privilege for it, the run goes on with the shared /tmp."""
    if os.environ.get("TUTTI_DOC_TEST_PRIVATE_TMP") == "1":
        tops = sorted({Path(p).resolve().relative_to("/tmp").parts[0] for p in keep
                       if Path(p).resolve().is_relative_to("/tmp")})
        fd = os.open("/tmp", os.O_RDONLY | os.O_DIRECTORY)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "tutti-doc-test", "/tmp"],
                       check=True)
        for top in tops:
            os.makedirs(f"/tmp/{top}", exist_ok=True)
            # --no-canonicalize: the old /tmp is only reachable through the descriptor
            subprocess.run(["mount", "--no-canonicalize", "--bind", f"/proc/self/fd/{fd}/{top}",
                            f"/tmp/{top}"], check=True, pass_fds=(fd,))
        os.close(fd)
        return
    if os.geteuid() != 0 or shutil.which("unshare") is None or subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "true"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode != 0:
        print("note: no private /tmp (needs root for a mount namespace): the blocks share /tmp")
        return
    sys.stdout.flush()
    os.execvpe("unshare", ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                           os.path.abspath(__file__)] + sys.argv[1:],
               dict(os.environ, TUTTI_DOC_TEST_PRIVATE_TMP="1"))


def main():
    here = Path(__file__).resolve().parent
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="Markdown files (relative to --source, or paths)")
    parser.add_argument("--source", default=str(here.parent.parent), help="the repository root")
    parser.add_argument("--build", help="the build tree (default: SOURCE/build)")
    parser.add_argument("--work", help="folder for scripts, programs and logs "
                                       "(default: BUILD/tests/docs/run/NAME)")
    parser.add_argument("--slow", action="store_true", help="run the blocks marked slow too")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT,
                        help="seconds a block may take unless its marker says "
                             f"(default {DEFAULT_TIMEOUT})")
    parser.add_argument("--only", metavar="LINES", help="run only the blocks whose opening fence is "
                                                         "on one of these lines (1,5-9)")
    parser.add_argument("--check", action="store_true", help="only check the markers")
    parser.add_argument("--list", action="store_true", help="list what would run, run nothing")
    parser.add_argument("--no-private-tmp", action="store_true", help="share the machine's /tmp")
    parser.add_argument("-v", "--verbose", action="store_true", help="list blocks that are not code")
    args = parser.parse_args()
    source = Path(args.source).resolve()
    args.build = args.build or str(source / "build")

    files, blocks, errors = [], [], []
    for name in args.files:
        path = Path(name) if Path(name).exists() else source / name
        try:
            shown = str(path.resolve().relative_to(source))
        except ValueError:
            shown = str(path)
        files.append(shown)
        found, wrong = parse_file(path, shown, args.timeout)
        blocks += found
        errors += wrong
    if errors:
        print("doc-test markers that are wrong:")
        for e in errors:
            print(f"  {e}")
        return 1
    if args.check:
        print(f"markers fine: {len(blocks)} blocks in {len(files)} files")
        return 0
    if args.list:
        for b in blocks:
            state = ("skip: " + b.skip if b.skip else "slow: " + b.slow if b.slow else
                     "fragment" if b.fragment else "output" if b.output else
                     "not code" if b.kind == "none" else "run")
            if b.skip_lines:
                state += f" (lines {format_lines(b.skip_lines)} not: {b.skip_lines_reason})"
            if b.needs:
                state += f" (needs {' '.join(b.needs)})"
            if b.in_slurm:
                state += " (in a Slurm of its own)"
            print(f"{b.where:28} {b.lang or 'unlabelled':10} {state}")
        return 0

    stem = "_".join(Path(f).stem for f in files) if len(files) <= 2 else "several"
    args.work = args.work or str(Path(args.build) / "tests" / "docs" / "run" / stem)
    if not args.no_private_tmp:
        enter_private_tmp([args.source, args.build, args.work, os.path.expanduser("~")])
    work = Path(args.work)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    runner = Runner(args)
    print(f"blocks run in {runner.root}; scripts, programs and logs in {work}", flush=True)
    only = parse_line_spec(args.only) if args.only else None
    for block in blocks:
        if only is None or block.line in only:
            runner.run_block(block)
    summarize(runner.results, files)
    statuses = [s for _, s, _ in runner.results]
    if "fail" in statuses:
        return 1
    ran = any(s in ("pass", "fragment") for s in statuses)
    if not ran and any(s in ("skip", "slow") for s in statuses):
        print("every block of these files was skipped")
        return 77
    return 0


if __name__ == "__main__":
    sys.exit(main())
