#!/usr/bin/python3
"""The Node client's tests, as the project's test command runs them: install
the pinned TypeScript compiler and Bun (npm ci of test/package-lock.json) in
a directory of the build tree, compile the package and its tests there for
Node and run them with Node's own test runner, then run the same TypeScript
sources under Bun's, each against the real rtsandboxd of $RTSANDBOX_BUILD.
Before the suites, the package is built and packed (npm pack), the tarball
installed offline into an empty bot project with the 0.7.3 bot of test/bot,
and that bot compiled with tsc --strict against the package's declarations;
bot.test.ts runs it.  Exit 77 (skipped) without Docker, the worker image or
Node 18."""

import json
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


def pack_and_build_bot(work, env):
    """npm pack of the package, installed offline into an empty project with
    test/bot/bot.ts, compiled with tsc --strict; the project's directory, or
    None after saying what failed."""
    tsc = os.path.join(work, "node_modules", ".bin", "tsc")
    types = os.path.join(work, "node_modules", "@types")
    pkg = os.path.join(work, "pkg")
    shutil.rmtree(pkg, ignore_errors=True)
    os.makedirs(pkg)
    for f in ("package.json", "README.md", "tsconfig.json"):
        shutil.copyfile(os.path.join(PKG, f), os.path.join(pkg, f))
    shutil.copytree(os.path.join(PKG, "src"), os.path.join(pkg, "src"))
    if subprocess.run([tsc, "-p", os.path.join(pkg, "tsconfig.json"),
                       "--typeRoots", types], env=env).returncode != 0:
        print("tsc failed on the package")
        return None
    # prepack would look for tsc in the package's own node_modules
    r = subprocess.run(["npm", "pack", "--ignore-scripts", "--json"],
                       cwd=pkg, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        print("npm pack failed:\n" + r.stdout + r.stderr)
        return None
    tarball = json.loads(r.stdout)[0]["filename"]
    bot = os.path.join(work, "bot")
    shutil.rmtree(bot, ignore_errors=True)
    os.makedirs(bot)
    for f in ("package.json", "bot.ts", "tsconfig.json"):
        shutil.copyfile(os.path.join(HERE, "bot", f), os.path.join(bot, f))
    shutil.copyfile(os.path.join(pkg, tarball), os.path.join(bot, tarball))
    # offline: the tarball has no dependency to fetch
    r = subprocess.run(["npm", "install", "--offline", "--no-audit",
                        "--no-fund", "./" + tarball], cwd=bot, env=env)
    if r.returncode != 0:
        print("npm install of %s into an empty project failed" % tarball)
        return None
    r = subprocess.run([tsc, "-p", os.path.join(bot, "tsconfig.json"),
                        "--strict", "--typeRoots", types], env=env)
    if r.returncode != 0:
        print("tsc --strict failed on the 0.7.3 bot")
        return None
    print("== %s installed into %s; the 0.7.3 bot compiles with tsc --strict"
          % (tarball, bot), flush=True)
    return bot


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
    bot = pack_and_build_bot(work, env)
    if bot is None:
        return 1
    tests = sorted(os.path.join(out, "test", f)
                   for f in os.listdir(os.path.join(out, "test"))
                   if f.endswith(".test.js"))
    args = [node, "--test"]
    if (major, minor) >= (20, 10):
        args.append("--test-concurrency=1")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin",
           "RTSANDBOX_BUILD": os.path.abspath(rtsb.BUILD),
           "RTSANDBOX_TOP": TOP,
           "RTSANDBOX_BOT_DIR": bot,
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
