"""Credentials per channel and per speaker (upstream.credentials), against
the real daemon as an unprivileged user, the real Docker daemon and the
fake upstream, which records the token of every request.

Each model call goes with the credential file of its turn's speaker, else
of its channel, else upstream.credential_file; with fallback "none" a call
with neither is answered 401 in the model service's error shape before any
connection.  Each file is read as credential_file is (current at every
call, a cache per file), a reload may change the files within the
directories egress was started with, and rtsandboxd -n checks every file
named.  With upstream.credential "hook" instead, two speakers' calls get
their own token from the client's credential.get hook."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
import rtsb  # noqa: E402
from rtsb import Client, Daemon, wait_until  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402
import test_broker as tb  # noqa: E402
from test_credhook import CredClient  # noqa: E402

IMAGE = "rtsandbox-worker:latest"
PREFIX = "rtsbs%d" % os.getpid()
NO_CREDENTIAL = {"type": "error", "error": {
    "type": "authentication_error",
    "message": "No credential is configured for this speaker or channel"}}


def write_token(path, token):
    """As a refresher does: a new file, renamed over the old one."""
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(token + "\n")
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def cred_dir(c):
    d = os.path.join(os.path.dirname(c["state_dir"]), "creds")
    os.makedirs(d, 0o700, exist_ok=True)
    return d


def setUpModule():
    tb.setUpModule()


def tearDownModule():
    tb.tearDownModule()


class SpeakerFiles(unittest.TestCase):
    """The reference worker in its container: every model call of a turn
    carries the token of the turn's speaker, channel or default."""

    @classmethod
    def setUpClass(cls):
        reason = rtsb.docker_skip_reason(IMAGE)
        if reason:
            raise unittest.SkipTest(reason)
        cls.certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
        cls.fu = FakeUpstream(cls.certdir, default_delay_ms=5)
        cls.fu.start()

        def conf(c):
            d = cred_dir(c)
            cls.creds = d
            for name in ("default", "alice", "bob"):
                write_token(os.path.join(d, name), "sk-" + name)
            # a second directory: egress may read each
            teams = os.path.join(os.path.dirname(d), "teams")
            os.mkdir(teams, 0o700)
            write_token(os.path.join(teams, "team"), "sk-team")
            c["docker"] = {"container_prefix": PREFIX}
            c["upstream"] = {
                "url": cls.fu.url, "ca_file": cls.fu.ca_file,
                "credential_file": os.path.join(d, "default"),
                "credentials": {
                    "channels": {"spk:team": os.path.join(teams, "team")},
                    "speakers": {"alice": os.path.join(d, "alice"),
                                 "bob": os.path.join(d, "bob")}}}
            c["timeouts"] = {"start_ms": 20000, "turn_ms": 40000}
        cls.d = Daemon(config=conf)
        try:
            cls.d.start()
            cls.c = Client(cls.d.socket)
            cls.c.sock.settimeout(90)
        except Exception:
            cls.tearDownClass()
            raise
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        if getattr(cls, "c", None) is not None:
            cls.c.close()
        d = getattr(cls, "d", None)
        if d is not None:
            try:
                d.stop()
            finally:
                rtsb.remove_containers(PREFIX)
                d.cleanup()
        cls.fu.stop()
        shutil.rmtree(cls.certdir, ignore_errors=True)

    def setUp(self):
        self.fu.reset()

    def params(self, key, speaker):
        type(self).n += 1
        return {"channel": key, "profile": "default",
                "turnId": "t%d" % self.n,
                "author": {"id": speaker, "name": "Speaker " + speaker},
                "text": "hello from %s" % speaker, "images": [],
                "memory": "", "thinking": "low"}

    def turn(self, key, speaker, client=None):
        res = (client or self.c).call("turn.run", self.params(key, speaker))
        self.assertTrue(res["ok"], res)
        return res

    def tokens(self, since=0):
        return [r["token"] for r in self.fu.requests(path="/v1/messages")
                if r["seq"] > since]

    def last_seq(self):
        reqs = self.fu.requests()
        return reqs[-1]["seq"] if reqs else 0

    def assertTurnTokens(self, key, speaker, token, client=None):
        seq = self.last_seq()
        self.turn(key, speaker, client)
        got = self.tokens(seq)
        self.assertGreaterEqual(len(got), 1)
        self.assertEqual(set(got), {token}, (key, speaker))

    def test_two_speakers_their_own_files(self):
        for who in ("alice", "bob", "alice", "bob"):
            self.assertTurnTokens("spk:main", who, "sk-" + who)
        log = self.d.read_log()
        for tok in ("sk-alice", "sk-bob", "sk-default", "sk-team"):
            self.assertNotIn(tok, log)

    def test_two_channels_at_once(self):
        """Two brokers, two turns in flight together: each call with the
        token of its own turn's speaker."""
        keys = {"alice": "spk:one", "bob": "spk:two"}
        for who, key in keys.items():
            self.turn(key, who)      # started, warm
        self.fu.reset()
        results, errors = {}, []

        def run(who):
            try:
                with Client(self.d.socket) as c:
                    c.sock.settimeout(90)
                    results[who] = c.call("turn.run",
                                          self.params(keys[who], who))
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        for _ in range(3):
            ths = [threading.Thread(target=run, args=(w,)) for w in keys]
            for th in ths:
                th.start()
            for th in ths:
                th.join(120)
        self.assertEqual(errors, [])
        for who in keys:
            self.assertTrue(results[who]["ok"], results[who])
        reqs = self.fu.requests(path="/v1/messages")
        self.assertGreaterEqual(len(reqs), 6)
        for r in reqs:
            text = json.dumps(r["json"])
            who = "alice" if "hello from alice" in text else "bob"
            self.assertIn("hello from " + who, text)
            self.assertEqual(r["token"], "sk-" + who)

    def test_speaker_without_a_file_falls_back(self):
        # the channel's file, else credential_file; a speaker's own file
        # wins over its channel's
        self.assertTurnTokens("spk:main", "carol", "sk-default")
        self.assertTurnTokens("spk:team", "carol", "sk-team")
        self.assertTurnTokens("spk:team", "alice", "sk-alice")
        self.assertTurnTokens("spk:team", "carol", "sk-team")

    def test_each_file_current_at_every_call(self):
        self.assertTurnTokens("spk:main", "alice", "sk-alice")
        self.assertTurnTokens("spk:main", "bob", "sk-bob")
        write_token(os.path.join(self.creds, "alice"), "sk-alice-2")
        self.assertTurnTokens("spk:main", "alice", "sk-alice-2")
        self.assertTurnTokens("spk:main", "bob", "sk-bob")
        write_token(os.path.join(self.creds, "alice"), "sk-alice")
        self.assertTurnTokens("spk:main", "alice", "sk-alice")

    def hup(self, field):
        before = self.c.call("daemon.stats")["counters"][field]
        os.kill(self.d.proc.pid, signal.SIGHUP)
        self.assertTrue(wait_until(
            lambda: self.c.call("daemon.stats")["counters"][field] ==
            before + 1, 10), self.d.read_log()[-2000:])

    def reconfigure(self, change):
        conf = json.loads(json.dumps(self.d.config))
        change(conf["upstream"]["credentials"])
        with open(self.d.config_path + ".new", "w") as f:
            json.dump(conf, f)
        os.rename(self.d.config_path + ".new", self.d.config_path)

    def test_reload(self):
        d = self.creds
        write_token(os.path.join(d, "bob-2"), "sk-bob-2")
        write_token(os.path.join(d, "dave"), "sk-dave")

        def change(cr):
            cr["speakers"]["bob"] = os.path.join(d, "bob-2")
            cr["speakers"]["dave"] = os.path.join(d, "dave")
        self.reconfigure(change)
        self.hup("reloads")
        try:
            self.assertTurnTokens("spk:main", "bob", "sk-bob-2")
            self.assertTurnTokens("spk:main", "dave", "sk-dave")
            self.assertTurnTokens("spk:main", "alice", "sk-alice")
            # a file where egress may not read: refused, the field named,
            # nothing of it applied
            other = tempfile.mkdtemp(prefix="rtsb-other-", dir="/tmp")
            self.addCleanup(shutil.rmtree, other, True)
            write_token(os.path.join(other, "eve"), "sk-eve")

            def change2(cr):
                change(cr)
                cr["speakers"]["dave"] = os.path.join(d, "bob")
                cr["speakers"]["eve"] = os.path.join(other, "eve")
            self.reconfigure(change2)
            self.hup("reloads_refused")
            self.assertIn("reload refused: the directory of "
                          "upstream.credentials.speakers.eve changed",
                          self.d.read_log())
            self.assertTurnTokens("spk:main", "dave", "sk-dave")
            self.assertTurnTokens("spk:main", "eve", "sk-default")
        finally:
            self.reconfigure(lambda cr: None)
            self.hup("reloads")

    def test_check_only_names_every_file(self):
        conf = json.loads(json.dumps(self.d.config))
        bad = os.path.join(self.creds, "bad")
        with open(bad, "w") as f:
            f.write("sk-bad\n")
        os.chmod(bad, 0o640)
        self.addCleanup(os.unlink, bad)
        conf["upstream"]["credentials"]["speakers"]["mallory"] = bad
        conf["upstream"]["credentials"]["channels"]["spk:gone"] = \
            os.path.join(self.creds, "missing")
        path = os.path.join(self.d.root, "check.json")
        with open(path, "w") as f:
            json.dump(conf, f)
        r = subprocess.run([rtsb.RTSANDBOXD, "-n", "-f", path],
                           capture_output=True, text=True, timeout=20)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertRegex(r.stderr, r"upstream\.credentials: "
                         r"upstream\.credentials\.speakers\.mallory: "
                         r".*mode 0640")
        self.assertRegex(r.stderr, r"upstream\.credentials: "
                         r"upstream\.credentials\.channels\[\"spk:gone\"\]"
                         r": .*does not exist")
        self.assertRegex(r.stderr, r"upstream\.credentials: 3 of 5 files")
        self.assertNotIn("sk-", r.stderr)


class NoFallback(tb.BrokerCase):
    """fallback "none": the test plays the worker, so it sees the answer
    as the worker's client would."""

    CHANNEL = "spk-none"

    @classmethod
    def configure(cls, c):
        d = cred_dir(c)
        for name in ("ann", "team"):
            write_token(os.path.join(d, name), "sk-" + name)
        del c["upstream"]["credential_file"]
        c["upstream"]["credentials"] = {
            "fallback": "none",
            "speakers": {"u-1": os.path.join(d, "ann")},
            "channels": {"spk-team": os.path.join(d, "team")}}

    def setUp(self):
        super().setUp()
        self.start_channel()

    def call(self, speaker, key=None, target="/anthropic/v1/messages"):
        with self.in_turn(key, author={"id": speaker, "name": "N"}) as \
                (w, tr, turn):
            return w.model(target=target)

    def test_speaker_with_a_file(self):
        r = self.call("u-1")
        self.assertAnswer(r, 200)
        reqs = self.fu.requests(path="/v1/messages")
        self.assertEqual([q["token"] for q in reqs], ["sk-ann"])

    def test_speaker_without_one_is_refused_401(self):
        for target in ("/anthropic/v1/messages",
                       "/anthropic/v1/messages/count_tokens",
                       "/anthropic/v1/messages?beta=true"):
            with self.subTest(target=target):
                r = self.call("u-2", target=target)
                self.assertAnswer(r, 401)
                self.assertTrue(r.complete, r)
                self.assertEqual(r.header("content-type"),
                                 "application/json")
                self.assertEqual(r.json(), NO_CREDENTIAL)
        # before any connection, and said in the log
        self.assertNothingUpstream()
        self.assertIn("no credential file for the speaker of turn",
                      self.d.read_log())
        # the channel goes on: the next speaker with a file gets through
        self.assertAnswer(self.call("u-1"), 200)

    def test_channel_file(self):
        self.start_channel("spk-team")
        r = self.call("u-2", key="spk-team")
        self.assertAnswer(r, 200)
        reqs = self.fu.requests(path="/v1/messages")
        self.assertEqual([q["token"] for q in reqs], ["sk-team"])


class HookSpeakers(unittest.TestCase):
    """upstream.credential "hook": two speakers in two channels at once,
    each call with the token the hook gave for its own turn's speaker."""

    @classmethod
    def setUpClass(cls):
        reason = rtsb.docker_skip_reason(IMAGE)
        if reason:
            raise unittest.SkipTest(reason)
        cls.certdir = tempfile.mkdtemp(prefix="rtsb-certs-", dir="/tmp")
        cls.fu = FakeUpstream(cls.certdir, default_delay_ms=5)
        cls.fu.start()

        def conf(c):
            c["docker"] = {"container_prefix": PREFIX + "h"}
            c["upstream"] = {"url": cls.fu.url, "ca_file": cls.fu.ca_file,
                             "credential": "hook"}
            c["timeouts"] = {"start_ms": 20000, "turn_ms": 40000}
        cls.d = Daemon(config=conf)
        try:
            cls.d.start()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        d = getattr(cls, "d", None)
        if d is not None:
            try:
                d.stop()
            finally:
                rtsb.remove_containers(PREFIX + "h")
                d.cleanup()
        cls.fu.stop()
        shutil.rmtree(cls.certdir, ignore_errors=True)

    def test_two_speakers_two_channels_at_once(self):
        keys = {"alice": "hook:one", "bob": "hook:two"}
        clients = {w: CredClient(self.d.socket) for w in keys}
        for c in clients.values():
            self.addCleanup(c.close)
        results, errors, n = {}, [], [0]

        def run(who):
            n[0] += 1
            try:
                results[who] = clients[who].turn({
                    "channel": keys[who], "profile": "default",
                    "turnId": "t%s%d" % (who, n[0]),
                    "author": {"id": who, "name": "Speaker " + who},
                    "text": "hello from " + who, "images": [],
                    "memory": "", "thinking": "low"}, 90)
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        for _ in range(3):
            ths = [threading.Thread(target=run, args=(w,)) for w in keys]
            for th in ths:
                th.start()
            for th in ths:
                th.join(120)
            self.assertEqual(errors, [])
            for who in keys:
                self.assertTrue(results[who]["ok"], results[who])
        reqs = self.fu.requests(path="/v1/messages")
        self.assertGreaterEqual(len(reqs), 6)
        for r in reqs:
            text = json.dumps(r["json"])
            who = "alice" if "hello from alice" in text else "bob"
            self.assertIn("hello from " + who, text)
            self.assertEqual(r["token"], "sk-hook-" + who)
        # each client was asked for its own turns' speaker alone
        for who, c in clients.items():
            asked = [a for a in c.asked if a["kind"] == "model"]
            self.assertGreaterEqual(len(asked), 3)
            for a in asked:
                self.assertEqual(a["speaker"]["id"], who)
                self.assertEqual(a["channel"], keys[who])


if __name__ == "__main__":
    unittest.main(verbosity=2)
