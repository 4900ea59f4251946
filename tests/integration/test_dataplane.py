"""The data path from the model service through egress and the broker to
the worker (PROTOCOL.md 3.2) where timing decides: the reflection filter
against an echo that comes with the head, and a credential file rewritten
in place between calls.  The real rtsandboxd as an unprivileged user, the
real Docker daemon and the fake upstream, with the classes and helpers of
test_broker.py."""
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_broker as tb  # noqa: E402
# unittest runs these for this module too: Docker, the sleeper image and
# the test CA's directory.
from test_broker import setUpModule, tearDownModule  # noqa: E402,F401

# An error body of the model service that quotes the credential.
ERROR_PREFIX = ('{"type":"error","error":{"type":"overloaded_error",'
                '"message":"bad key ')
ERROR_SUFFIX = '"}}'
CALL = {"max_tokens": 10, "messages": [{"role": "user", "content": "e"}]}


class EchoWithTheHead(tb.BrokerCase):
    """The echo lands in the very first body bytes, in the same TLS record
    as the head (fake upstream "one_write"): egress sees it before the head
    goes out, so the worker gets the broker's 502, every time, and never a
    connection closed without a status line."""

    CHANNEL = "brk-echo"
    ROUNDS = 8

    def setUp(self):
        super().setUp()
        self.start_channel()

    def assertNoSecret(self, r):
        for e in tb.all_encodings(tb.REAL_TOKEN):
            self.assertNotIn(e, r.raw)

    def test_echo_in_the_first_record_is_502(self):
        cases = [(status, framing, enc)
                 for status in (529, 200)
                 for framing in ("length", "chunked")
                 for enc in ("raw", "base64", "json_u")]
        with self.in_turn() as (w, tr, turn):
            for i in range(self.ROUNDS):
                for status, framing, enc in cases:
                    with self.subTest(round=i, status=status,
                                      framing=framing, encoding=enc):
                        self.fu.script({
                            "kind": "reflect", "status": status,
                            "encoding": enc, "one_write": True,
                            "framing": framing, "prefix": ERROR_PREFIX,
                            "suffix": ERROR_SUFFIX,
                            "headers": {"content-type":
                                        "application/json"}})
                        r = w.model(CALL)
                        self.assertTrue(r.head_complete, r)
                        self.assertAnswer(r, 502, "Broker call failed")
                        self.assertNoSecret(r)
        self.assertEqual(len(self.fu.requests()),
                         self.ROUNDS * len(cases))

    def test_echo_after_the_head_cuts_the_body(self):
        """The head went out with text that cannot begin the secret; the
        echo in a later record cuts the body: the status line and the
        head, then the end of the connection, never the secret."""
        with self.in_turn() as (w, tr, turn):
            for framing in ("length", "chunked"):
                with self.subTest(framing=framing):
                    self.fu.script({
                        "kind": "reflect", "status": 529, "encoding": "raw",
                        "framing": framing, "lead": "{\"padding\": 1, ",
                        "delay_ms": 300, "prefix": ERROR_PREFIX,
                        "suffix": ERROR_SUFFIX,
                        "headers": {"content-type": "application/json"}})
                    r = w.model(CALL)
                    self.assertTrue(r.head_complete, r)
                    self.assertEqual(r.status, 529, r)
                    self.assertTrue(r.eof, r)
                    self.assertFalse(r.complete, r)
                    self.assertTrue(r.body.startswith(b"{\"padding\": 1"),
                                    r.body[:60])
                    self.assertNoSecret(r)


class CredentialRewrittenInPlace(tb.BrokerCase):
    """A refresher that writes the credential file in place, with a token
    of the same length: the next call carries the new one, whether the
    file changed a moment ago or long after it was last read."""

    CHANNEL = "brk-cred"

    def setUp(self):
        super().setUp()
        self.start_channel()
        self.cred = self.d.config["upstream"]["credential_file"]

    def tearDown(self):
        tb.write_secret(self.cred, tb.REAL_TOKEN + "\n")

    def rewrite(self, token):
        with open(self.cred, "r+") as f:
            f.truncate(0)
            f.write(token + "\n")

    def test_same_length_token_in_place(self):
        tokens = ["sk-test-AAAA-token", "sk-test-BBBB-token",
                  "sk-test-CCCC-token"]
        with self.in_turn() as (w, tr, turn):
            for i, token in enumerate(tokens):
                self.rewrite(token)
                if i == 2:
                    # Long enough for egress to trust what it reads,
                    # then a rewrite: the timestamps must tell.
                    self.assertAnswer(w.model(CALL), 200)
                    self.assertEqual(self.fu.last()["token"], token)
                    time.sleep(1.2)
                    self.assertAnswer(w.model(CALL), 200)
                    token = "sk-test-DDDD-token"
                    self.rewrite(token)
                self.assertAnswer(w.model(CALL), 200)
                self.assertEqual(self.fu.last()["token"], token)


if __name__ == "__main__":
    unittest.main(verbosity=2)
