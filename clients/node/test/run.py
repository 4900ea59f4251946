#!/usr/bin/python3
"""The Node client's tests, as the project's test command runs them: install
the pinned TypeScript compiler and Bun (npm ci of test/package-lock.json) in
a directory of the build tree, compile the package and its tests there for
Node and run them with Node's own test runner, then run the same TypeScript
sources under Bun's, each against the real rtsandboxd of $RTSANDBOX_BUILD.
Exit 77 (skipped) without Docker, the worker image or Node 18."""

import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
TOP = os.path.dirname(os.path.dirname(PKG))
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))
import rtsb  # noqa: E402

SKIP = 77


def main():
    node = shutil.which("node")
    if node is None:
        print("skipped: node is not installed")
        return SKIP
    version = subprocess.run([node, "--version"], capture_output=True,
                             text=True).stdout.strip()
    major, minor = (int(x) for x in version.lstrip("v").split(".")[:2])
    if major < 18:
        print("skipped: Node %s; the client needs 18 or later" % version)
        return SKIP
    why = rtsb.docker_skip_reason("rtsandbox-worker:latest")
    if why is not None:
        rtsb.docker_cleanup()
        print("skipped: " + why)
        return SKIP
    rtsb.docker_cleanup()
    work = os.path.join(os.path.abspath(rtsb.BUILD), "clients-node")
    os.makedirs(work, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copyfile(os.path.join(HERE, f), os.path.join(work, f))
    env = dict(os.environ, npm_config_update_notifier="false",
               npm_config_fund="false", npm_config_audit="false")
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund",
                        "--prefer-offline"], cwd=work, env=env)
    if r.returncode != 0:
        print("npm ci failed: the TypeScript compiler and Bun could not be "
              "installed from the npm registry")
        return 1
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    r = subprocess.run([os.path.join(work, "node_modules", ".bin", "tsc"),
                        "-p", os.path.join(PKG, "tsconfig.test.json"),
                        "--outDir", out, "--typeRoots",
                        os.path.join(work, "node_modules", "@types")],
                       env=env)
    if r.returncode != 0:
        print("tsc failed")
        return 1
    with open(os.path.join(out, "package.json"), "w") as f:
        f.write('{"type": "module"}\n')
    tests = sorted(os.path.join(out, "test", f)
                   for f in os.listdir(os.path.join(out, "test"))
                   if f.endswith(".test.js"))
    args = [node, "--test"]
    if (major, minor) >= (20, 10):
        args.append("--test-concurrency=1")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin",
           "RTSANDBOX_BUILD": os.path.abspath(rtsb.BUILD),
           "RTSANDBOX_TOP": TOP,
           "HOME": os.environ.get("HOME", "/tmp")}
    print("== Node %s" % version, flush=True)
    rc = subprocess.run(args + tests, env=env).returncode
    bun = os.path.join(work, "node_modules", ".bin", "bun")
    r = subprocess.run([bun, "--version"], capture_output=True, text=True) \
        if os.path.exists(bun) else None
    if r is None or r.returncode != 0:
        print("== Bun: not runnable on this machine; its run is left out")
        return rc
    print("== Bun %s, on the TypeScript sources" % r.stdout.strip(),
          flush=True)
    sources = sorted(os.path.join(HERE, f) for f in os.listdir(HERE)
                     if f.endswith(".test.ts"))
    rb = subprocess.run([bun, "test", "--timeout", "300000"] + sources,
                        cwd=PKG, env=env).returncode
    return rc or rb


if __name__ == "__main__":
    sys.exit(main())
