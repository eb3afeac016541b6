#!/usr/bin/env python3
"""tutti.torch imported under a torch it was not built for, from a build tree with both builds.

    torch_versions_test.py BUILD/python BUILD/torch2/python PYTHON_1_13 PYTHON_2_X

The extension links against the libtorch it was built with: build/python's (Debian's torch 1.13)
aborted under torch 2.x (std::system_error: Invalid argument), build/torch2/python's crashed under
1.13, and with both folders on PYTHONPATH (the way to get the core package `tutti` and the 2.x
backend together) `tutti.torch` was always build/python's, so torch 2.x aborted. Checked:
- either build alone under the other torch: an ImportError naming both torch versions and what to
  build or use (exit status 1, no signal);
- both folders on PYTHONPATH, in either order, under either torch: the build for that torch is
  used, `import tutti` (the core package) works, and a 1-rank group all-reduces.
"""
import os
import subprocess
import sys
import tempfile

PROBE = r"""
import os, sys, torch, torch.distributed as dist
import tutti, tutti.torch
print("backend from", os.path.dirname(tutti.torch._backend.__file__))
print("core package", tutti.__file__)
dist.init_process_group("tutti", init_method="file://" + sys.argv[1], rank=0, world_size=1)
t = torch.ones(3)
dist.all_reduce(t)
assert t.tolist() == [1.0, 1.0, 1.0], t
dist.destroy_process_group()
print("ok")
"""


def run(python, pythonpath, code, *args):
    env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([python, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    return p.returncode, p.stdout


def version(python):
    return run(python, "", "import torch; print(torch.__version__)")[1].strip().splitlines()[-1]


def main():
    build, build2, python1, python2 = sys.argv[1:5]
    v1, v2 = version(python1), version(python2)
    failures = []
    # One build under the other torch: a clear ImportError, no crash.
    for python, folder, built, running in ((python2, build, v1, v2), (python1, build2, v2, v1)):
        rc, out = run(python, folder, "import tutti.torch")
        print(f"$ PYTHONPATH={folder} {python} -c 'import tutti.torch'  -> {rc}\n{out}")
        needles = ["ImportError", f"built for torch {built}", f"runs torch {running}",
                   "pip install --no-build-isolation", "build/torch2/python"]
        missing = [n for n in needles if n not in out]
        if rc != 1 or missing:
            failures.append(f"{python} with {folder}: exit status {rc}, missing {missing}")
    # Both builds on the path, either order: the right one, and it works.
    with tempfile.TemporaryDirectory() as tmp:
        for python, want in ((python1, build), (python2, build2)):
            for path in (f"{build}:{build2}", f"{build2}:{build}"):
                rc, out = run(python, path, PROBE, os.path.join(tmp, f"init{len(failures)}"))
                print(f"$ PYTHONPATH={path} {python} (a 1-rank group) -> {rc}\n{out}")
                chosen = os.path.realpath(os.path.join(want, "tutti", "torch"))
                if rc != 0 or "ok" not in out.split() or f"backend from {chosen}" not in out:
                    failures.append(f"{python} with PYTHONPATH={path}: exit status {rc}, "
                                    f"wanted the backend from {chosen}")
                for f in os.listdir(tmp):
                    os.remove(os.path.join(tmp, f))
    if failures:
        print("FAILED:\n  " + "\n  ".join(failures))
        return 1
    print("every import picked the build for its torch or said which one to use")
    return 0


if __name__ == "__main__":
    sys.exit(main())
