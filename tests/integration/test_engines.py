"""rtsandboxctl doctor (rtsandboxctl(1)) and rtsandboxd -n, against what
this machine has: each check passing here and made to fail, by the
configuration, by files made here, by a fake engine on a Unix socket saying
what a broken one would, and by rtsandbox-deny (RTSANDBOX_DENY) refusing the
kernel's system calls.  Run as a rootless Podman user with
RTSANDBOX_PODMAN_SOCKET set, the checks of this host are made against that
user's Podman instead of dockerd."""

import http.server
import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rtsb  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
DENY = os.environ.get("RTSANDBOX_DENY", os.path.join(
    rtsb.BUILD, "tests", "rtsandbox-deny"))
PODMAN_SOCKET = os.environ.get("RTSANDBOX_PODMAN_SOCKET")
PODMAN_IMAGE = "localhost/rtsandbox-worker:latest"


# ---------------------------------------------------------------- doctor

DOCKER_VERSION = {"Version": "20.10.24", "ApiVersion": "1.41",
                  "MinAPIVersion": "1.12", "Components": [
                      {"Name": "Engine", "Version": "20.10.24"}]}
DOCKER_INFO = {"DefaultRuntime": "runc", "CgroupVersion": "2",
               "MemoryLimit": True, "SwapLimit": True, "PidsLimit": True,
               "CpuCfsQuota": True, "SecurityOptions": [],
               "Runtimes": {"runc": {"path": "runc"}, "runsc": {
                   "path": "/usr/bin/runsc",
                   "runtimeArgs": ["--host-uds=open", "--network=none"]}}}
PODMAN_VERSION = {"Version": "4.3.1", "ApiVersion": "1.41",
                  "MinAPIVersion": "1.24", "Components": [
                      {"Name": "Podman Engine", "Version": "4.3.1"}]}
IMAGE_JSON = {"Id": "sha256:" + "ab" * 32, "RepoTags": [IMAGE]}


class FakeEngine:
    """An Engine API on a Unix socket that says of itself what a test
    wants: answers maps a path after /v1.41 to (status, JSON)."""

    def __init__(self, path, answers):
        self.answers = answers
        self.paths = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                fake.paths.append(path)
                if path.startswith("/v1.41"):
                    path = path[len("/v1.41"):]
                status, js = fake.answers.get(path, (404, {
                    "message": "no such thing"}))
                body = json.dumps(js).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        class Server(socketserver.ThreadingMixIn,
                     socketserver.UnixStreamServer):
            daemon_threads = True

            def get_request(self):
                s, _ = self.socket.accept()
                return s, ("fake", 0)

        self.path = path
        self.server = Server(path, Handler)
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        os.unlink(self.path)


class Doctor(unittest.TestCase):
    """Each check, passing and failing, by line: "STATUS  name: text"."""

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="rtsb-dr-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.root, True)
        os.chmod(self.root, 0o755)
        self.state = os.path.join(self.root, "state")
        os.mkdir(self.state, 0o700)
        self.cred = os.path.join(self.root, "credential")
        with open(self.cred, "w") as f:
            f.write("sk-test\n")
        os.chmod(self.cred, 0o600)
        self.config = {
            "state_dir": self.state,
            "control_socket": os.path.join(self.root, "control.sock"),
            "image": PODMAN_IMAGE if PODMAN_SOCKET else IMAGE,
            "profiles": {"default": {"model": "m"}},
            "upstream": {"credential_file": self.cred},
            "docker": {"socket": PODMAN_SOCKET or rtsb.DOCKER_SOCKET},
        }

    def engine(self, answers):
        path = os.path.join(self.root, "engine.sock")
        fe = FakeEngine(path, answers)
        self.addCleanup(fe.close)
        self.config["docker"]["socket"] = path
        self.config["image"] = IMAGE
        return fe

    def run_doctor(self, conf=None, wrap=(), args=None):
        """(exit status, {name: (status, text)}, output)."""
        if conf:
            conf(self.config)
        path = os.path.join(self.root, "rtsandboxd.json")
        with open(path, "w") as f:
            json.dump(self.config, f)
        cmd = list(wrap) + [rtsb.RTSANDBOXCTL] + (args or ["doctor", "-f",
                                                           path])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                           env={"PATH": "/usr/bin:/bin"})
        lines = {}
        for line in r.stdout.splitlines():
            head, _, text = line.partition(": ")
            status, _, name = head.partition("  ")
            if status.strip() in ("ok", "warn", "FAIL"):
                lines[name.strip()] = (status.strip(), text)
        return r.returncode, lines, r.stdout + r.stderr

    def assertLine(self, lines, name, status, *words):
        self.assertIn(name, lines, lines)
        self.assertEqual(lines[name][0], status, lines[name])
        for w in words:
            self.assertIn(w, lines[name][1])

    # ---- this machine, as it is

    def test_this_host(self):
        rc, lines, out = self.run_doctor()
        print(out)
        self.assertEqual(list(lines), [
            "configuration", "user", "groups", "engine", "image", "runtime",
            "limits", "landlock", "seccomp", "user namespaces", "state_dir",
            "upstream.credential_file", "control_socket", "socket paths"])
        for name in ("configuration", "user", "engine", "image", "runtime",
                     "seccomp", "state_dir", "upstream.credential_file",
                     "control_socket", "socket paths"):
            self.assertEqual(lines[name][0], "ok", (name, lines[name]))
        if PODMAN_SOCKET:
            self.assertLine(lines, "groups", "ok", "no root-equivalent")
            self.assertLine(lines, "engine", "ok", "Podman", "rootless")
        else:
            # the test's service user is in group docker
            self.assertLine(lines, "groups", "warn", "docker",
                            "rootless Podman")
            self.assertLine(lines, "engine", "ok", "Docker Engine",
                            "running as root")
        failed = [n for n, (s, _) in lines.items() if s == "FAIL"]
        self.assertEqual(rc, 1 if failed else 0, out)
        self.assertIn("%d failed" % len(failed), out)

    @unittest.skipIf(PODMAN_SOCKET is not None, "Docker only")
    def test_runtime_known_or_not(self):
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="rtsb-no-such-runtime"))
        self.assertLine(lines, "runtime", "FAIL", "rtsb-no-such-runtime",
                        "is not one of the engine's", "runc",
                        "/etc/docker/daemon.json")
        self.assertEqual(rc, 1)
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runc"))
        self.assertLine(lines, "runtime", "ok", "runc")

    def test_image_missing(self):
        rc, lines, out = self.run_doctor(
            lambda c: c.update(image="rtsb-no-such-image:latest"))
        self.assertLine(lines, "image", "FAIL", "rtsb-no-such-image:latest",
                        "never pulls", "load -i")
        self.assertEqual(rc, 1)

    # ---- the engine, unreachable or saying what a broken one would

    def test_engine_unreachable(self):
        rc, lines, out = self.run_doctor(lambda c: c["docker"].update(
            socket=os.path.join(self.root, "none.sock")))
        self.assertLine(lines, "engine", "FAIL", "No such file",
                        "no engine listens")
        for name in ("image", "runtime", "limits"):
            self.assertNotIn(name, lines)
        self.assertEqual(rc, 1)
        # a socket this user may not open
        path = os.path.join(self.root, "closed.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(1)
        self.addCleanup(s.close)
        os.chmod(path, 0)
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(socket=path))
        self.assertLine(lines, "engine", "FAIL", "Permission denied",
                        "rootless Podman socket")

    def test_engine_api_version(self):
        v = dict(DOCKER_VERSION, ApiVersion="1.52", MinAPIVersion="1.44",
                 Version="29.0.0")
        self.engine({"/version": (200, v), "/info": (200, DOCKER_INFO)})
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "engine", "FAIL", "1.44 to 1.52",
                        "not v1.41")
        self.assertEqual(rc, 1)

    def test_fake_docker_passes(self):
        fe = self.engine({"/version": (200, DOCKER_VERSION),
                          "/info": (200, DOCKER_INFO),
                          "/images/%s/json" % IMAGE.replace(":", "%3A"):
                          (200, IMAGE_JSON)})
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runsc"))
        self.assertLine(lines, "engine", "ok", "Docker Engine 20.10.24")
        self.assertLine(lines, "image", "ok", IMAGE, "sha256:abab")
        self.assertLine(lines, "runtime", "ok", "runsc", "--host-uds=open")
        self.assertLine(lines, "limits", "ok", "cgroup v2")
        self.assertIn("/v1.41/version", fe.paths)

    def test_gvisor_without_its_options(self):
        info = json.loads(json.dumps(DOCKER_INFO))
        info["Runtimes"]["runsc"]["runtimeArgs"] = ["--network=none"]
        self.engine({"/version": (200, DOCKER_VERSION), "/info": (200, info)})
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runsc"))
        self.assertLine(lines, "runtime", "FAIL", "--host-uds=open",
                        "broker socket", "runtimeArgs")
        info["Runtimes"]["runsc"]["runtimeArgs"] = ["--host-uds=open"]
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "runtime", "FAIL", "--network=none")
        # gVisor as the engine's default is checked the same way
        info["DefaultRuntime"] = "runsc"
        self.config["docker"].pop("runtime")
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "runtime", "FAIL", "runsc", "--network=none")

    def test_limits_not_enforceable(self):
        info = dict(DOCKER_INFO, SwapLimit=False, PidsLimit=False)
        self.engine({"/version": (200, DOCKER_VERSION), "/info": (200, info)})
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "limits", "FAIL", " swap pids limits",
                        "swapaccount=1")
        self.assertEqual(rc, 1)

    def test_rootless_docker(self):
        info = dict(DOCKER_INFO, SecurityOptions=["name=rootless"])
        self.engine({"/version": (200, DOCKER_VERSION), "/info": (200, info)})
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "engine", "FAIL", "rootless Docker",
                        "subordinate ids")

    def test_fake_podman(self):
        libpod = {"host": {"cgroupVersion": "v1", "cgroupControllers": [],
                           "security": {"rootless": True}}}
        answers = {"/version": (200, PODMAN_VERSION),
                   "/info": (200, {"DefaultRuntime": "crun",
                                   "CgroupVersion": "1"}),
                   "/libpod/info": (200, libpod),
                   "/images/%s/json" % IMAGE.replace(":", "%3A"): (200, {
                       "Id": "sha256:" + "cd" * 32,
                       "RepoTags": [PODMAN_IMAGE]})}
        self.engine(answers)
        rc, lines, out = self.run_doctor(
            lambda c: c.update(image=IMAGE))
        self.assertLine(lines, "engine", "ok", "Podman 4.3.1", "rootless")
        # loaded images are localhost/...: the configured name must be it
        self.assertLine(lines, "image", "FAIL", PODMAN_IMAGE,
                        "every start recreates")
        self.assertLine(lines, "runtime", "ok", "containers.conf")
        self.assertLine(lines, "limits", "FAIL", "cgroup v1", "unbounded",
                        "nofile=256:256")
        # a runtime asked of Podman
        rc, lines, out = self.run_doctor(
            lambda c: c["docker"].update(runtime="runsc"))
        self.assertLine(lines, "runtime", "FAIL", "does not choose runtimes")
        # cgroup v2 with the controllers delegated: enforceable
        libpod["host"].update(cgroupVersion="v2",
                              cgroupControllers=["cpu", "memory", "pids"])
        self.config["docker"].pop("runtime")
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "limits", "warn", "cgroup v2",
                        "open-files")
        libpod["host"]["cgroupControllers"] = ["cpu"]
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "limits", "FAIL", " memory pids",
                        "not delegated")
        # Podman as root: as much root as dockerd, and keep-id fails
        libpod["host"]["security"]["rootless"] = False
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "engine", "FAIL", "runs as root")

    # ---- the configuration and the files it names

    def test_configuration_invalid(self):
        rc, lines, out = self.run_doctor(
            lambda c: c.update(image="-bad", timeouts={"start_ms": 1}))
        self.assertLine(lines, "configuration", "FAIL", "image",
                        "and more", "rtsandboxd -n")
        # the checks that need no configuration still run
        for name in ("user", "groups", "landlock", "seccomp",
                     "user namespaces"):
            self.assertIn(name, lines)
        self.assertNotIn("engine", lines)
        self.assertEqual(rc, 1)
        rc, lines, out = self.run_doctor(args=[
            "doctor", "-f", os.path.join(self.root, "missing.json")])
        self.assertLine(lines, "configuration", "FAIL", "missing.json")
        self.assertEqual(rc, 1)
        r = subprocess.run([rtsb.RTSANDBOXCTL, "doctor", "extra"],
                           capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)

    def test_state_dir(self):
        os.chmod(self.state, 0o750)
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "state_dir", "FAIL", "mode 0750",
                        "chmod 0700")
        self.assertEqual(rc, 1)
        os.chmod(self.state, 0o700)
        link = os.path.join(self.root, "link")
        os.symlink(self.state, link)
        rc, lines, out = self.run_doctor(lambda c: c.update(state_dir=link))
        self.assertLine(lines, "state_dir", "FAIL", "symbolic link")
        rc, lines, out = self.run_doctor(lambda c: c.update(
            state_dir=os.path.join(self.root, "none")))
        self.assertLine(lines, "state_dir", "FAIL", "does not exist",
                        "install -d -m 0700")

    def test_credential_file(self):
        os.chmod(self.cred, 0o640)
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "upstream.credential_file", "FAIL",
                        "mode 0640", "chmod 0600")
        self.assertEqual(rc, 1)
        os.chmod(self.cred, 0o600)
        mcp = os.path.join(self.root, "mcp.token")
        os.symlink(self.cred, mcp)
        rc, lines, out = self.run_doctor(lambda c: c.update(mcp={
            "credential_file": mcp}))
        self.assertLine(lines, "upstream.credential_file", "ok")
        self.assertLine(lines, "mcp.credential_file", "FAIL",
                        "symbolic link")
        os.unlink(mcp)
        rc, lines, out = self.run_doctor()
        self.assertLine(lines, "mcp.credential_file", "FAIL",
                        "does not exist")

    def test_control_socket_directory(self):
        open_dir = os.path.join(self.root, "open")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        rc, lines, out = self.run_doctor(lambda c: c.update(
            control_socket=os.path.join(open_dir, "c.sock")))
        self.assertLine(lines, "control_socket", "FAIL", "mode 0777",
                        "writable by neither")
        self.assertEqual(rc, 1)

    def test_socket_paths(self):
        # 100 - len(state_dir) - 17 characters left for a segment
        deep = self.root + "/" + "d" * (100 - 17 - len(self.root) - 1 - 20)
        os.mkdir(deep, 0o700)
        rc, lines, out = self.run_doctor(lambda c: c.update(state_dir=deep))
        self.assertLine(lines, "socket paths", "warn", "leave 20 "
                        "characters", "shorter state_dir")
        self.assertLine(lines, "configuration", "warn")
        self.assertLine(lines, "state_dir", "ok")
        deep = self.root + "/" + "e" * (100 - 17 - len(self.root) - 1)
        os.mkdir(deep, 0o700)
        rc, lines, out = self.run_doctor(lambda c: c.update(state_dir=deep))
        self.assertLine(lines, "socket paths", "FAIL", "too long")
        self.assertEqual(rc, 1)

    # ---- the kernel, made to refuse

    def deny(self, *rules):
        if not os.access(DENY, os.X_OK):
            self.skipTest("%s is not built" % DENY)
        return [DENY] + list(rules) + ["--"]

    def test_landlock_missing(self):
        rc, lines, out = self.run_doctor(
            wrap=self.deny("ENOSYS:landlock_create_ruleset"))
        self.assertLine(lines, "landlock", "warn", "not in this kernel",
                        "file rules")
        rc, lines, out = self.run_doctor(
            wrap=self.deny("EOPNOTSUPP:landlock_create_ruleset"))
        self.assertLine(lines, "landlock", "warn", "not enabled", "lsm=")

    def test_seccomp_refused(self):
        # PR_SET_SECCOMP is 22
        rc, lines, out = self.run_doctor(wrap=self.deny(
            "ENOSYS:seccomp", "EINVAL:prctl:0=22"))
        self.assertLine(lines, "seccomp", "FAIL", "no filter could be "
                        "loaded", "cannot start")
        self.assertEqual(rc, 1)

    def test_user_namespaces_refused(self):
        rc, lines, out = self.run_doctor(wrap=self.deny("EPERM:unshare"))
        self.assertLine(lines, "user namespaces", "warn",
                        "Operation not permitted", "Landlock and seccomp")

    # ---- rtsandboxd -n: the same host checks, never the engine

    def test_rtsandboxd_n(self):
        path = os.path.join(self.root, "rtsandboxd.json")
        with open(path, "w") as f:
            json.dump(self.config, f)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in ("user", "groups", "landlock", "seccomp",
                     "user namespaces", "state_dir",
                     "upstream.credential_file", "control_socket",
                     "socket paths"):
            self.assertIn(" %s: " % name, r.stderr)
        self.assertIn("configuration OK", r.stderr)
        self.assertIn("rtsandboxctl doctor -f", r.stderr)
        self.assertNotIn("ok    engine:", r.stderr)
        os.chmod(self.cred, 0o644)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("FAIL  upstream.credential_file", r.stderr)
        self.assertIn("the host is not ready", r.stderr)
        os.chmod(self.cred, 0o600)
        r = subprocess.run(self.deny("ENOSYS:seccomp", "EINVAL:prctl:0=22") +
                           [rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("FAIL  seccomp", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
