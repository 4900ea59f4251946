"""Helpers for the integration tests: a temporary installation of
rtsandboxd (configuration, state directory, credential) started as the
current, unprivileged user, and a JSON-RPC client of its control socket."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

BUILD = os.environ.get("RTSANDBOX_BUILD", os.path.join(
    os.path.dirname(__file__), "..", "..", "build"))
RTSANDBOXD = os.path.join(BUILD, "supervisor", "rtsandboxd")
RTSANDBOXCTL = os.path.join(BUILD, "ctl", "rtsandboxctl")
HELPERS = {
    "fsguard": os.path.join(BUILD, "fsguard", "rtsandbox-fsguard"),
    "docker": os.path.join(BUILD, "dockerd-client", "rtsandbox-docker"),
    "egress": os.path.join(BUILD, "egress", "rtsandbox-egress"),
    "broker": os.path.join(BUILD, "broker", "rtsandbox-broker"),
    "research": os.path.join(BUILD, "research", "rtsandbox-research"),
}


def base_config(root):
    """A valid configuration rooted in the directory root."""
    return {
        "state_dir": os.path.join(root, "state"),
        "control_socket": os.path.join(root, "control.sock"),
        "image": "rtsandbox-worker:latest",
        "profiles": {"default": {"model": "claude-test"}},
        "upstream": {"url": "https://127.0.0.1:8443",
                     "credential_file": os.path.join(root, "credential")},
        "tools": ["roll_dice"],
    }


class Daemon:
    """rtsandboxd in the foreground with its own directory under /tmp (short,
    so the broker socket path stays within 100 characters)."""

    def __init__(self, config=None, helper_dir=None, extra_args=(), debug=True,
                 wrap=(), env=None):
        self.root = tempfile.mkdtemp(prefix="rtsb-", dir="/tmp")
        # debug=False: as under a service manager, without -d, so only what
        # an operator's log gets is written; a socket of ours as NOTIFY_SOCKET
        # keeps it in front all the same.
        self.debug = debug
        self.notify = None
        os.chmod(self.root, 0o700)
        os.mkdir(os.path.join(self.root, "state"), 0o700)
        cred = os.path.join(self.root, "credential")
        with open(cred, "w") as f:
            f.write("sk-test-real-token\n")
        os.chmod(cred, 0o600)
        self.config = base_config(self.root)
        if config:
            config(self.config)
        self.config_path = os.path.join(self.root, "rtsandboxd.json")
        with open(self.config_path, "w") as f:
            json.dump(self.config, f)
        self.socket = self.config["control_socket"]
        self.log_path = os.path.join(self.root, "rtsandboxd.log")
        self.helper_dir = helper_dir
        self.extra_args = list(extra_args)
        # wrap: a command rtsandboxd runs under (rtsandbox-deny ... --);
        # env: added to its otherwise bare environment
        self.wrap = list(wrap)
        self.env = dict(env or {})
        self.proc = None
        self.log = None

    def start(self, wait=True):
        args = self.wrap + [RTSANDBOXD] + (["-d"] if self.debug else []) + \
            ["-f", self.config_path] + self.extra_args
        if self.helper_dir:
            args += ["-x", self.helper_dir]
        env = {"PATH": "/usr/bin:/bin"}
        env.update(self.env)
        if not self.debug:
            if self.notify is None:
                self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self.notify.bind(os.path.join(self.root, "notify.sock"))
            env["NOTIFY_SOCKET"] = self.notify.getsockname()
        self.close_log()
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log,
                                     env=env)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=10.0):
        """Until the socket answers and the three singletons are ready."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("rtsandboxd exited %d:\n%s" % (
                    self.proc.returncode, self.read_log()))
            if os.path.exists(self.socket):
                try:
                    with Client(self.socket) as c:
                        procs = c.call("daemon.stats")["processes"]
                        if all(p["state"] == "ready" for p in procs):
                            return procs
                except (ConnectionError, OSError):
                    pass
            time.sleep(0.05)
        raise AssertionError("rtsandboxd not ready:\n" + self.read_log())

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def close_log(self):
        if self.log is not None:
            self.log.close()
            self.log = None

    def stop(self, timeout=10.0):
        if self.proc is None or self.proc.poll() is not None:
            self.close_log()
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        finally:
            self.close_log()

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close_log()
        if self.notify is not None:
            self.notify.close()
            self.notify = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__("%d: %s" % (code, message))
        self.code = code
        self.message = message


class Client:
    """A line-oriented JSON-RPC client; call() waits for its own answer and
    keeps notifications and other answers for later."""

    def __init__(self, path, initialize=True, hooks=()):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.buf = b""
        self.next_id = 0
        self.pending = []
        try:
            self.sock.settimeout(30)
            self.sock.connect(path)
            if initialize:
                self.call("initialize",
                          {"client": "tests", "hooks": list(hooks)})
        except BaseException:
            self.sock.close()
            raise

    def send_raw(self, data):
        self.sock.sendall(data)

    def read_message(self):
        while b"\n" not in self.buf:
            # Below malloc's mmap threshold: a 1 MiB recv(2) buffer was an
            # mmap(2), mremap(2) and munmap(2) per read, half a millisecond
            # of every warm turn that bench/turns.py charged to the daemon.
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send_raw(json.dumps(msg).encode() + b"\n")
        return self.next_id

    def wait(self, rid):
        for i, m in enumerate(self.pending):
            if m.get("id") == rid:
                return self._result(self.pending.pop(i))
        while True:
            m = self.read_message()
            if m.get("id") == rid:
                return self._result(m)
            self.pending.append(m)

    @staticmethod
    def _result(m):
        if "error" in m:
            raise RpcError(m["error"]["code"], m["error"]["message"])
        return m["result"]

    def call(self, method, params=None):
        return self.wait(self.request(method, params))

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


DOCKER_SOCKET = "/var/run/docker.sock"
DOCKER_TIMEOUT = 30
_docker_config = None


def docker(*args, timeout=DOCKER_TIMEOUT):
    """The docker CLI with a private configuration directory (HOME may be
    another user's when the tests run under setpriv)."""
    global _docker_config
    if _docker_config is None:
        _docker_config = tempfile.mkdtemp(prefix="rtsb-dcfg-", dir="/tmp")
    return subprocess.run(
        ["docker"] + list(args), capture_output=True, text=True,
        timeout=timeout, env={"PATH": "/usr/local/bin:/usr/bin:/bin",
                              "DOCKER_CONFIG": _docker_config,
                              "HOME": _docker_config,
                              "DOCKER_BUILDKIT": "0"})


def docker_cleanup():
    if _docker_config is not None:
        shutil.rmtree(_docker_config, ignore_errors=True)


def docker_skip_reason(image):
    """Why the Docker tests cannot run here, or None."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(5)
        try:
            s.connect(DOCKER_SOCKET)
            s.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = s.recv(4096)
        finally:
            s.close()
    except OSError as e:
        return "Docker socket %s not reachable by uid %d: %s" % (
            DOCKER_SOCKET, os.getuid(), e)
    if b" 200 " not in answer.split(b"\r\n", 1)[0]:
        return "Docker socket %s answers /_ping with %r" % (
            DOCKER_SOCKET, answer[:60])
    if shutil.which("docker", path="/usr/local/bin:/usr/bin:/bin") is None:
        return "the docker command line client is not installed"
    try:
        r = docker("image", "inspect", image)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "docker image inspect failed: %s" % e
    if r.returncode != 0:
        return ("image %s missing (the worker's: DOCKER_BUILDKIT=0 docker "
                "build -f worker/Dockerfile -t %s BUILD/worker)" %
                (image, image))
    return None


SLEEPER = "rtsandbox-test-sleeper:latest"
SLEEPER_SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                           "fixtures", "sleeper")


def ensure_sleeper():
    """Build the do-nothing worker image (tests/fixtures/sleeper) when it is
    missing; None, or why it could not be built."""
    if docker("image", "inspect", SLEEPER).returncode == 0:
        return None
    d = tempfile.mkdtemp(prefix="rtsb-sleeper-", dir="/tmp")
    try:
        r = subprocess.run(["gcc", "-static", "-O2", "-o",
                            os.path.join(d, "sleeper"),
                            os.path.join(SLEEPER_SRC, "sleeper.c")],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return "cannot build the sleeper: " + r.stderr
        shutil.copy(os.path.join(SLEEPER_SRC, "Dockerfile"), d)
        r = docker("build", "-q", "-t", SLEEPER, d, timeout=300)
        if r.returncode != 0:
            return "docker build of %s failed: %s" % (SLEEPER, r.stderr)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return None


def prefixed_containers(prefix):
    r = docker("ps", "-a", "--format", "{{.Names}}")
    if r.returncode != 0:
        raise AssertionError("docker ps: " + r.stderr)
    return sorted(n for n in r.stdout.split() if n.startswith(prefix + "-"))


def remove_containers(prefix):
    names = prefixed_containers(prefix)
    if names:
        docker("rm", "-f", *names)


def inspect_container(name):
    r = docker("inspect", "--type", "container", name)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)[0]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie is not alive for our purposes. It may be reaped between
    # open() and read(): the read then fails with ESRCH.
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def wait_until(pred, timeout=10.0, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()


class DockerProxy:
    """A Unix socket forwarding bytes to Docker's: a Docker that answers
    slowly (a request whose request line starts with one of self.slow is
    held back self.delay s) or goes away (down(): every connection cut and
    new ones refused, until up())."""

    def __init__(self, path, upstream="/var/run/docker.sock"):
        self.path, self.upstream = path, upstream
        self.slow, self.delay = (), 0
        self.conns = []
        self.lock = threading.Lock()
        self.srv = None
        self.up()

    def up(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
        self.srv = socket.socket(socket.AF_UNIX)
        self.srv.bind(self.path)
        self.srv.listen(16)
        threading.Thread(target=self._accept, args=(self.srv,),
                         daemon=True).start()

    def down(self):
        if self.srv is None:
            return
        self.srv.close()
        self.srv = None
        os.unlink(self.path)
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.conns = []

    close = down

    def _accept(self, srv):
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            u = socket.socket(socket.AF_UNIX)
            try:
                u.connect(self.upstream)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            done = []
            threading.Thread(target=self._pipe, args=(c, u, True, done),
                             daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c, False, done),
                             daemon=True).start()

    def _pipe(self, src, dst, requests, done):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if requests and self.slow and data.startswith(self.slow):
                    time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        done.append(1)
        if len(done) == 2:     # the last of the two closes both
            with self.lock:
                self.conns = [s for s in self.conns if s not in (src, dst)]
            src.close()
            dst.close()
