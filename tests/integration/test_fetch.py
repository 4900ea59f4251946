"""The controlled fetch of PROTOCOL.md 8 (egress/fetch.c), run in-process by
tests/tools/fetchcli against local fixtures: a scripted DNS server
(tests/fixtures/fake_dns.py) and HTTP/HTTPS servers on loopback addresses
(tests/fixtures/fetch_fixture.py), with the test seam that counts
127.0.0.0/8 as public.  Each test checks what fetchcli answered and what
reached the fixtures: the questions asked, the connections accepted (on
which local address), the Host header and the TLS server name.

Needs a build with -Dtest_seams=true; neither Docker nor the service user.
RTSANDBOX_BUILD points at the build directory."""

import ctypes
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures"))
from fake_dns import FakeDns  # noqa: E402
from fetch_fixture import (PAGE, FetchFixture, RawServer,  # noqa: E402
                           body_bytes, coded)

BUILD = os.environ.get("RTSANDBOX_BUILD",
                       os.path.join(HERE, "..", "..", "build"))
FETCHCLI = os.path.join(BUILD, "tests", "fetchcli")
MIB = 1048576
DEFAULT_MAX = 5 * MIB
# A second loopback address the fixtures also listen on, and two with
# nothing listening.
ALT = "127.0.0.5"
DEAD1 = "127.0.0.2"
DEAD2 = "127.0.0.3"
ENCODINGS = ("gzip", "deflate", "rawdeflate", "br")
DEC_NAMES = {"gzip": "gzip", "deflate": "deflate", "rawdeflate": "deflate",
             "br": "br"}

dns = None
fx = None


def setUpModule():
    global dns, fx
    if not os.access(FETCHCLI, os.X_OK):
        raise unittest.SkipTest("%s missing: build with -Dtest_seams=true"
                                % FETCHCLI)
    dns = FakeDns()
    dns.start()
    fx = FetchFixture(extra_addrs=[ALT])
    fx.start()


def tearDownModule():
    if fx is not None:
        fx.stop()
    if dns is not None:
        dns.stop()


def sha(b):
    return hashlib.sha256(b).hexdigest()


class FetchCase(unittest.TestCase):
    def setUp(self):
        dns.reset()
        fx.reset()
        dns.set("public.test", a=["127.0.0.1"], aaaa=[])
        dns.set("second.test", a=["127.0.0.1"], aaaa=[])

    def fetch(self, url, deadline=None, max_bytes=None, redirects=None,
              ca=True, loopback=True, body=False, timeout=120):
        cmd = [FETCHCLI, "--dns", dns.addr]
        if loopback:
            cmd.append("--loopback-public")
        if ca:
            cmd += ["--ca", fx.ca_file]
        if deadline is not None:
            cmd += ["--deadline-ms", str(deadline)]
        if max_bytes is not None:
            cmd += ["--max-bytes", str(max_bytes)]
        if redirects is not None:
            cmd += ["--max-redirects", str(redirects)]
        if body:
            cmd.append("--body")
        cmd.append(url)
        t0 = time.monotonic()
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        self.elapsed = time.monotonic() - t0
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        r = json.loads(p.stdout)
        self.last = r
        return r

    def assertOk(self, r, status=200):
        self.assertTrue(r["ok"], r.get("error"))
        self.assertEqual(r["status"], status)

    def assertRefused(self, r, err, text=None):
        self.assertFalse(r["ok"], r)
        self.assertEqual(r["err"], err, r["error"])
        if text is not None:
            self.assertIn(text, r["error"])

    def assertNothingReached(self):
        self.assertEqual(dns.queries(), [])
        self.assertEqual(fx.conns(), [])


class Pinning(FetchCase):
    def test_connects_to_the_vetted_address_with_the_name(self):
        dns.set("pin.test", a=[ALT], aaaa=[])
        r = self.fetch(fx.url("/echo", host="pin.test"))
        self.assertOk(r)
        reqs = fx.requests()
        self.assertEqual(len(reqs), 1)
        self.assertEqual(reqs[0]["local"], [ALT, fx.http_port])
        self.assertEqual(reqs[0]["host"], "pin.test:%d" % fx.http_port)
        self.assertEqual([c["local"][0] for c in fx.conns()], [ALT])
        self.assertEqual(sorted(dns.queries()),
                         [("pin.test", "A"), ("pin.test", "AAAA")])
        self.assertEqual(r["url"], fx.url("/echo", host="pin.test"))
        self.assertEqual(r["content_type"], "application/json")

    def test_request_headers(self):
        self.assertOk(self.fetch(fx.url("/echo")))
        hdrs = fx.requests()[0]["headers"]
        self.assertEqual(sorted(k.lower() for k, _ in hdrs),
                         ["accept", "accept-encoding", "host", "user-agent"])
        self.assertIn(["accept-encoding", "identity"],
                      [[k.lower(), v] for k, v in hdrs])

    def test_one_private_address_refuses_all(self):
        cases = {
            "mixed4.test": dict(a=["127.0.0.1", "10.0.0.1"], aaaa=[]),
            "mixed6.test": dict(a=["127.0.0.1"], aaaa=["fd00::1"]),
            "mapped.test": dict(a=["127.0.0.1"], aaaa=["::ffff:10.0.0.1"]),
            "first.test": dict(a=["192.168.1.1", "127.0.0.1"], aaaa=[]),
            "loop6.test": dict(a=[], aaaa=["::1"]),
        }
        bad = {"mixed4.test": "10.0.0.1", "mixed6.test": "fd00::1",
               "mapped.test": "::ffff:10.0.0.1", "first.test": "192.168.1.1",
               "loop6.test": "::1"}
        for name, ans in cases.items():
            with self.subTest(name=name):
                fx.reset()
                dns.set(name, **ans)
                r = self.fetch(fx.url("/page", host=name))
                self.assertRefused(r, "address not public",
                                   "%s: address %s is not public"
                                   % (name, bad[name]))
                self.assertEqual(fx.conns(), [])

    def test_no_address(self):
        dns.set("nodata.test", a=[], aaaa=[])
        dns.set("gone.test", a="NXDOMAIN", aaaa="NXDOMAIN")
        for name in ("nodata.test", "gone.test", "unknown.test"):
            with self.subTest(name=name):
                r = self.fetch(fx.url("/page", host=name))
                self.assertRefused(r, "no address",
                                   "%s: the name has no address" % name)
        self.assertEqual(fx.conns(), [])

    def test_a_failed_family_refuses(self):
        # The list of addresses would not be complete.
        dns.set("half.test", a=["127.0.0.1"], aaaa="SERVFAIL")
        r = self.fetch(fx.url("/page", host="half.test"))
        self.assertRefused(r, "name resolution failed",
                           "half.test: the name cannot be resolved")
        self.assertEqual(fx.conns(), [])

    def test_ipv4_only_and_both_families(self):
        dns.set("v4.test", a=["127.0.0.1"])
        self.assertOk(self.fetch(fx.url("/page", host="v4.test")))
        # An IPv4-mapped loopback address is public under the seam and is
        # reached over an AF_INET6 socket.
        dns.set("both.test", a=[], aaaa=["::ffff:127.0.0.1"])
        self.assertOk(self.fetch(fx.url("/page", host="both.test")))

    def test_literal_public_address(self):
        r = self.fetch("http://127.0.0.1:%d/page" % fx.http_port)
        self.assertOk(r)
        self.assertEqual(dns.queries(), [])
        self.assertEqual(fx.requests()[0]["host"],
                         "127.0.0.1:%d" % fx.http_port)
        # An IPv6 literal (IPv4-mapped, public under the seam) goes over
        # an AF_INET6 socket to that address.
        r = self.fetch("http://[::ffff:127.0.0.1]:%d/page" % fx.http_port)
        self.assertOk(r)
        self.assertEqual(r["url"],
                         "http://[::ffff:127.0.0.1]:%d/page" % fx.http_port)
        self.assertEqual(dns.queries(), [])


class Literals(FetchCase):
    SPELLINGS_10 = ["167772161", "0xa000001", "0XA000001", "012.0.0.1",
                    "10.1", "10.0.1", "0x0a.0.0.1", "%31%30.0.0.1",
                    "10.0.0.1.", "012.00.000.01"]
    IPV6 = ["[::1]", "[fd00::1]", "[::ffff:10.0.0.1]", "[::ffff:a00:1]",
            "[2001:db8::1]", "[2001::1]", "[2002::1]", "[fe80::1]",
            "[::]", "[ff02::1]", "[0:0:0:0:0:0:0:1]"]

    def test_numeric_ipv4_spellings_refused(self):
        for host in self.SPELLINGS_10:
            with self.subTest(host=host):
                r = self.fetch("http://%s:%d/page" % (host, fx.http_port))
                self.assertRefused(r, "address not public",
                                   "address 10.0.0.1 is not public")
        self.assertNothingReached()

    def test_loopback_spellings_without_the_seam(self):
        for host in ("2130706433", "0x7f000001", "0177.0.0.1", "127.1",
                     "127.0.1"):
            with self.subTest(host=host):
                r = self.fetch("http://%s:%d/page" % (host, fx.http_port),
                               loopback=False)
                self.assertRefused(r, "address not public",
                                   "address 127.0.0.1 is not public")
        self.assertNothingReached()

    def test_ipv6_literals_refused(self):
        for host in self.IPV6:
            with self.subTest(host=host):
                r = self.fetch("http://%s:%d/page" % (host, fx.http_port))
                self.assertRefused(r, "address not public", "is not public")
        r = self.fetch("http://[fe80::1%%25lo]:%d/" % fx.http_port)
        self.assertRefused(r, "URL refused")
        self.assertNothingReached()

    def test_bad_urls(self):
        for url in ("ftp://public.test/", "file:///etc/passwd",
                    "http://user:pw@public.test/", "//public.test/",
                    "public.test/page", "http://pub lic.test/",
                    "http://public.test:0/", "http://public.test:65536/",
                    "gopher://public.test/"):
            with self.subTest(url=url):
                self.assertRefused(self.fetch(url), "URL refused",
                                   "url refused: ")
        self.assertNothingReached()


class Failover(FetchCase):
    def test_refused_address_then_the_next(self):
        dns.set("fo.test", a=[DEAD1, "127.0.0.1"], aaaa=[])
        r = self.fetch(fx.url("/page", host="fo.test"))
        self.assertOk(r)
        self.assertEqual([c["local"][0] for c in fx.conns()], ["127.0.0.1"])
        self.assertEqual(fx.requests()[0]["host"],
                         "fo.test:%d" % fx.http_port)

    def test_refused_then_next_over_tls(self):
        dns.set("fotls.public.test", a=[DEAD1, ALT], aaaa=[])
        r = self.fetch(fx.url("/echo", host="fotls.public.test", https=True))
        self.assertOk(r)
        req = fx.requests()[0]
        self.assertEqual(req["local"][0], ALT)
        self.assertEqual(req["sni"], "fotls.public.test")

    def test_timed_out_address_then_the_next(self):
        # TCP is accepted but the TLS handshake never comes: 3 s, then the
        # next address.
        dns.set("slow.public.test", a=[DEAD1, ALT], aaaa=[])
        raw = RawServer(DEAD1, fx.https_port, None)
        try:
            r = self.fetch(fx.url("/echo", host="slow.public.test",
                                  https=True))
        finally:
            raw.stop()
        self.assertOk(r)
        self.assertEqual(raw.count, 1)
        self.assertEqual(fx.requests()[0]["local"][0], ALT)
        self.assertGreater(r["ms"], 2500)
        self.assertLess(r["ms"], 6000)

    def test_every_address_refused(self):
        dns.set("dead.test", a=[DEAD1, DEAD2], aaaa=[])
        r = self.fetch(fx.url("/page", host="dead.test"))
        self.assertRefused(
            r, "connection failed",
            "connection to every address of dead.test failed: "
            "%s: Connection refused; %s: Connection refused" % (DEAD1, DEAD2))

    def test_not_connect_level_does_not_fail_over(self):
        dns.set("garbage.test", a=[DEAD1, "127.0.0.1"], aaaa=[])
        for data in (b"NOT HTTP AT ALL\r\n\r\n", b"",
                     b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"):
            with self.subTest(data=data):
                fx.reset()
                raw = RawServer(DEAD1, fx.http_port, data)
                try:
                    r = self.fetch(fx.url("/page", host="garbage.test"))
                finally:
                    raw.stop()
                self.assertFalse(r["ok"], r)
                self.assertNotEqual(r["err"], "connection failed")
                self.assertEqual(raw.count, 1)
                self.assertEqual(fx.conns(), [])

    def test_tls_failure_does_not_fail_over(self):
        # The first address answers with a certificate for other names.
        dns.set("other.test", a=["127.0.0.1", ALT], aaaa=[])
        r = self.fetch(fx.url("/echo", host="other.test", https=True))
        self.assertRefused(r, "TLS failed", "other.test: TLS failed")
        self.assertEqual([c["local"][0] for c in fx.conns()], ["127.0.0.1"])


class Redirects(FetchCase):
    def test_relative_chain(self):
        r = self.fetch(fx.url("/chain/3"))
        self.assertOk(r)
        self.assertEqual(r["redirects"], 3)
        self.assertEqual(r["url"], fx.url("/chain/0"))
        self.assertEqual([q["path"] for q in fx.requests()],
                         ["/chain/3", "/chain/2", "/chain/1", "/chain/0"])
        # Resolved again at every hop.
        self.assertEqual(dns.count("public.test", "A"), 4)
        self.assertEqual(dns.count("public.test", "AAAA"), 4)

    def test_max_redirects_at_the_limit_and_past(self):
        for limit in (1, 3, 10):
            with self.subTest(limit=limit):
                r = self.fetch(fx.url("/chain/%d" % limit), redirects=limit)
                self.assertOk(r)
                self.assertEqual(r["redirects"], limit)
                fx.reset()
                r = self.fetch(fx.url("/chain/%d" % (limit + 1)),
                               redirects=limit)
                self.assertRefused(r, "too many redirects",
                                   "too many redirects (%d)" % limit)
                self.assertEqual(len(fx.requests()), limit + 1)
        # the default, 5
        fx.reset()
        r = self.fetch(fx.url("/chain/5"))
        self.assertOk(r)
        self.assertEqual(r["redirects"], 5)
        r = self.fetch(fx.url("/chain/6"))
        self.assertRefused(r, "too many redirects", "too many redirects (5)")

    def test_redirects_off_returns_the_3xx(self):
        for code in (301, 302, 303, 307, 308):
            with self.subTest(code=code):
                fx.reset()
                r = self.fetch(fx.url("/redirect?code=%d&to=../page%%23f"
                                      % code), redirects=0, body=True)
                self.assertOk(r, code)
                self.assertEqual(r["location"], fx.url("/page"))
                self.assertEqual(r["url"], fx.url("/redirect?code=%d&to="
                                                  "../page%%23f" % code))
                self.assertEqual(r["body_sha256"], sha(b"moved\n"))
                self.assertEqual(len(fx.requests()), 1)
        # A location that would be refused is left out.
        r = self.fetch(fx.url("/redirect?to=http://10.0.0.1/"), redirects=0)
        self.assertOk(r, 302)
        self.assertIsNone(r["location"])

    def test_absolute_redirect_to_another_name(self):
        dns.set("second.test", a=[ALT], aaaa=[])
        to = fx.url("/echo", host="second.test")
        r = self.fetch(fx.url("/redirect?to=" + to))
        self.assertOk(r)
        self.assertEqual(r["url"], to)
        reqs = fx.requests()
        self.assertEqual([q["host"] for q in reqs],
                         ["public.test:%d" % fx.http_port,
                          "second.test:%d" % fx.http_port])
        self.assertEqual(reqs[1]["local"][0], ALT)

    def test_redirect_to_https(self):
        to = fx.url("/echo", host="public.test", https=True)
        r = self.fetch(fx.url("/redirect?code=301&to=" + to))
        self.assertOk(r)
        self.assertEqual(fx.requests()[1]["sni"], "public.test")

    def test_redirect_locations_vetted(self):
        dns.set("private.test", a=["10.0.0.9"], aaaa=[])
        cases = [
            ("http://10.0.0.1/", "address not public",
             "redirect refused: address 10.0.0.1 is not public"),
            ("http://167772161:%d/" % fx.http_port, "address not public",
             "address 10.0.0.1 is not public"),
            ("http://[fd00::1]/", "address not public", "is not public"),
            ("http://private.test:%d/page" % fx.http_port,
             "address not public",
             "private.test: address 10.0.0.9 is not public"),
            ("ftp://public.test/", "redirect refused", "redirect refused"),
            ("http://user@public.test/", "redirect refused",
             "redirect refused"),
        ]
        for to, err, text in cases:
            with self.subTest(to=to):
                fx.reset()
                r = self.fetch(fx.url("/redirect?to=" + to))
                self.assertRefused(r, err, text)
                self.assertEqual(len(fx.conns()), 1)

    def test_dns_rebinding_between_hops(self):
        dns.set("rebind.test", a=[["127.0.0.1"], ["10.0.0.1"]], aaaa=[])
        r = self.fetch(fx.url("/redirect?to=/page", host="rebind.test"))
        self.assertRefused(r, "address not public",
                           "rebind.test: address 10.0.0.1 is not public")
        self.assertEqual(dns.count("rebind.test", "A"), 2)
        self.assertEqual([q["path"] for q in fx.requests()], ["/redirect"])

    def test_rebinding_to_a_second_name(self):
        dns.set("hop2.test", a=[["10.1.2.3"]], aaaa=[])
        r = self.fetch(fx.url("/redirect?to=" +
                              fx.url("/page", host="hop2.test")))
        self.assertRefused(r, "address not public",
                           "hop2.test: address 10.1.2.3 is not public")
        self.assertEqual(len(fx.conns()), 1)


class Bounds(FetchCase):
    N = 200000

    def test_identity_at_the_limit_and_past(self):
        n = self.N
        for framing in ("length", "chunked", "close"):
            with self.subTest(framing=framing):
                url = fx.url("/body?n=%d&framing=%s" % (n, framing))
                r = self.fetch(url, max_bytes=n)
                self.assertOk(r)
                self.assertEqual(r["body_len"], n)
                self.assertEqual(r["body_sha256"], sha(body_bytes(n)))
                r = self.fetch(url, max_bytes=n - 1)
                self.assertRefused(r, "answer too large",
                                   "answer larger than %d bytes" % (n - 1))
                if framing == "length":
                    self.assertIn("(content-length %d)" % n, r["error"])
                else:
                    self.assertNotIn("content-length", r["error"])

    def test_decoded_at_the_limit_and_past(self):
        n = self.N
        for enc in ENCODINGS:
            with self.subTest(enc=enc):
                self.assertLess(len(coded(enc, n)), n)
                url = fx.url("/body?n=%d&enc=%s&framing=chunked" % (n, enc))
                r = self.fetch(url, max_bytes=n)
                self.assertOk(r)
                self.assertEqual(r["body_len"], n)
                self.assertEqual(r["body_sha256"], sha(body_bytes(n)))
                r = self.fetch(url, max_bytes=n - 1)
                self.assertRefused(r, "answer too large",
                                   "answer larger than %d bytes once "
                                   "decoded (%s)" % (n - 1, DEC_NAMES[enc]))

    def test_wire_at_the_limit_and_past(self):
        n = self.N
        for enc in ENCODINGS:
            for framing in ("chunked", "length"):
                with self.subTest(enc=enc, framing=framing):
                    c = len(coded(enc, n, noise=True))
                    self.assertGreater(c, n)
                    url = fx.url("/body?n=%d&enc=%s&noise=1&framing=%s"
                                 % (n, enc, framing))
                    r = self.fetch(url, max_bytes=c)
                    self.assertOk(r)
                    self.assertEqual(r["body_sha256"],
                                     sha(body_bytes(n, noise=True)))
                    r = self.fetch(url, max_bytes=c - 1)
                    self.assertRefused(r, "answer too large",
                                       "answer larger than %d bytes"
                                       % (c - 1))
                    self.assertNotIn("decoded", r["error"])
                    if framing == "length":
                        self.assertIn("content-length", r["error"])

    def test_bombs_cut_at_the_bound(self):
        n = 64 * MIB
        for enc in ENCODINGS:
            with self.subTest(enc=enc):
                self.assertLess(len(coded(enc, n)), MIB)
                r = self.fetch(fx.url("/body?n=%d&enc=%s" % (n, enc)))
                self.assertRefused(r, "answer too large",
                                   "answer larger than %d bytes once "
                                   "decoded (%s)"
                                   % (DEFAULT_MAX, DEC_NAMES[enc]))

    def test_declared_length_refused_before_the_body(self):
        # The fixture declares the length and then sends nothing for 10 s.
        r = self.fetch(fx.url("/declared?cl=%d" % (DEFAULT_MAX + 1)),
                       deadline=8000)
        self.assertRefused(r, "answer too large",
                           "answer larger than %d bytes (content-length %d)"
                           % (DEFAULT_MAX, DEFAULT_MAX + 1))
        self.assertLess(self.elapsed, 4)

    def test_default_bound(self):
        for framing in ("chunked", "length"):
            with self.subTest(framing=framing):
                r = self.fetch(fx.url("/body?n=%d&framing=%s"
                                      % (DEFAULT_MAX, framing)))
                self.assertOk(r)
                self.assertEqual(r["body_len"], DEFAULT_MAX)
                self.assertEqual(r["body_sha256"],
                                 sha(body_bytes(DEFAULT_MAX)))
        r = self.fetch(fx.url("/body?n=%d&framing=chunked"
                              % (DEFAULT_MAX + 1)))
        self.assertRefused(r, "answer too large",
                           "answer larger than %d bytes" % DEFAULT_MAX)


        top = 32 * MIB
        url = fx.url("/body?n=%d&framing=chunked" % top)
        r = self.fetch(url, max_bytes=top)
        self.assertOk(r)
        self.assertEqual(r["body_len"], top)
        self.assertEqual(r["body_sha256"], sha(body_bytes(top)))
        r = self.fetch(fx.url("/body?n=%d&framing=chunked" % (top + 1)),
                       max_bytes=top)
        self.assertRefused(r, "answer too large",
                           "answer larger than %d bytes" % top)

    def test_unknown_content_encoding_refused(self):
        r = self.fetch(fx.url("/unknown-enc"))
        self.assertRefused(r, "unsupported content-encoding",
                           'public.test: unsupported content-encoding '
                           '"zstd"')

    def test_other_statuses_are_answers(self):
        r = self.fetch(fx.url("/status/404"), body=True)
        self.assertOk(r, 404)
        self.assertEqual(r["body_sha256"], sha(b"status body\n"))
        r = self.fetch(fx.url("/page"), body=True)
        self.assertOk(r)
        self.assertEqual(r["body_sha256"], sha(PAGE))
        self.assertEqual(r["content_type"], "text/html; charset=utf-8")


class Deadline(FetchCase):
    def test_slow_body(self):
        r = self.fetch(fx.url("/slow?ms=5000"), deadline=500)
        self.assertRefused(r, "deadline passed", "deadline of 500 ms passed")
        self.assertLess(self.elapsed, 3)

    def test_slow_name_server(self):
        dns.set("mute.test", a="DROP", aaaa="DROP")
        r = self.fetch(fx.url("/page", host="mute.test"), deadline=300)
        self.assertRefused(r, "deadline passed", "deadline of 300 ms passed")
        self.assertEqual(fx.conns(), [])

    def test_covers_redirects(self):
        to = fx.url("/slow?ms=5000")
        r = self.fetch(fx.url("/redirect?to=" + to), deadline=700)
        self.assertRefused(r, "deadline passed", "deadline of 700 ms passed")
        self.assertEqual(len(fx.requests()), 2)


class Options(FetchCase):
    def test_in_range(self):
        for kw in (dict(deadline=1), dict(deadline=120000),
                   dict(max_bytes=1), dict(max_bytes=32 * MIB),
                   dict(redirects=0), dict(redirects=10)):
            with self.subTest(**kw):
                r = self.fetch(fx.url("/page"), **kw)
                self.assertNotEqual(r["err"], "option out of range", r)
        self.assertOk(self.fetch(fx.url("/page"), deadline=120000,
                                 max_bytes=32 * MIB, redirects=10))
        url = fx.url("/page?")
        url += "a" * (8192 - len(url))
        self.assertEqual(len(url), 8192)
        self.assertOk(self.fetch(url))

    def test_one_past(self):
        cases = [
            (dict(deadline=0), "deadline_ms must be 1-120000"),
            (dict(deadline=120001), "deadline_ms must be 1-120000"),
            (dict(max_bytes=0), "max_bytes must be 1-33554432"),
            (dict(max_bytes=32 * MIB + 1), "max_bytes must be 1-33554432"),
            (dict(redirects=11), "max_redirects must be 0-10"),
        ]
        for kw, text in cases:
            with self.subTest(**kw):
                r = self.fetch(fx.url("/page"), **kw)
                self.assertRefused(r, "option out of range")
                self.assertEqual(r["error"], text)
        url = fx.url("/page?")
        url += "a" * (8193 - len(url))
        r = self.fetch(url)
        self.assertRefused(r, "option out of range")
        self.assertEqual(r["error"], "url must be 1-8192 bytes")
        self.assertNothingReached()


class Tls(FetchCase):
    def test_name_in_host_sni_and_certificate(self):
        dns.set("www.public.test", a=[ALT], aaaa=[])
        r = self.fetch(fx.url("/echo", host="www.public.test", https=True))
        self.assertOk(r)
        req = fx.requests()[0]
        self.assertEqual(req["scheme"], "https")
        self.assertEqual(req["sni"], "www.public.test")
        self.assertEqual(req["host"], "www.public.test:%d" % fx.https_port)
        self.assertEqual(req["local"], [ALT, fx.https_port])

    def test_certificate_for_another_name_fails(self):
        dns.set("other.test", a=["127.0.0.1"], aaaa=[])
        r = self.fetch(fx.url("/echo", host="other.test", https=True))
        self.assertRefused(r, "TLS failed", "other.test: TLS failed")
        self.assertEqual(len(fx.conns()), 1)
        self.assertEqual(fx.requests(), [])

    def test_literal_address_is_not_the_certificate_name(self):
        r = self.fetch("https://127.0.0.1:%d/echo" % fx.https_port)
        self.assertRefused(r, "TLS failed")
        self.assertEqual(fx.requests(), [])

    def test_system_bundle_does_not_know_the_test_ca(self):
        r = self.fetch(fx.url("/echo", https=True), ca=False)
        self.assertRefused(r, "TLS failed", "public.test: TLS failed")
        self.assertEqual(fx.requests(), [])


def _frame(obj, data=b""):
    js = json.dumps(obj).encode()
    return struct.pack(">II", len(js), len(data)) + js + data


def _recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _read_frame(sock):
    """(obj, data), or None at EOF."""
    hdr = _recv_exact(sock, 8)
    if hdr is None:
        return None
    jl, dl = struct.unpack(">II", hdr)
    js = _recv_exact(sock, jl)
    data = _recv_exact(sock, dl) if dl else b""
    return json.loads(js), data


def _set_pdeathsig():
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


class EgressBase(FetchCase):
    """The real rtsandbox-egress in its sandbox (seccomp, Landlock), driven
    over its supervisor pipe."""
    TEST_SEAMS = True

    def setUp(self):
        super().setUp()
        binary = os.path.join(BUILD, "egress", "rtsandbox-egress")
        if not os.access(binary, os.X_OK):
            self.skipTest("%s missing" % binary)
        self.tmp = tempfile.mkdtemp(prefix="rtsb-egress-")
        self.log = open(os.path.join(self.tmp, "egress.log"), "w+")
        self.sup, child = socket.socketpair()
        fd = child.fileno()
        self.proc = subprocess.Popen(
            ["/bin/bash", "-c", 'exec 3<&%d %d<&-; exec "$0" "$@"'
             % (fd, fd), binary, "-d", "-p", fx.ca_file],
            pass_fds=(fd,), stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=self.log, preexec_fn=_set_pdeathsig, env={})
        child.close()
        self.sup.settimeout(30)
        config = {"t": "config_egress",
                  "upstream_url": "https://127.0.0.1:9",
                  "credential_file": os.path.join(self.tmp, "nocred"),
                  "allow_http": False, "uid": 1000,
                  "max_output_tokens": 128000}
        if self.TEST_SEAMS:
            config.update({"test_dns": dns.addr,
                           "test_loopback_public": True,
                           "test_fetch_ca_file": fx.ca_file})
        self.send(config)
        self.send({"t": "config_done"})
        self.assertEqual(self.recv()[0]["t"], "ready", self.logtext())

    def tearDown(self):
        self.sup.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def logtext(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def send(self, obj, data=b"", sock=None, fds=()):
        sock = sock or self.sup
        if fds:
            socket.send_fds(sock, [_frame(obj, data)], list(fds))
        else:
            sock.sendall(_frame(obj, data))

    def recv(self, sock=None):
        r = _read_frame(sock or self.sup)
        self.assertIsNotNone(r, self.logtext())
        return r

    def fetch_msg(self, mid, url, deadline=60000, max_bytes=DEFAULT_MAX,
                  redirects=5):
        return {"t": "egr_fetch", "id": mid, "url": url,
                "deadline_ms": deadline, "max_bytes": max_bytes,
                "max_redirects": redirects}

    peers = 0

    def attach_research(self):
        mine, theirs = socket.socketpair()
        type(self).peers += 1
        self.send({"t": "egress_attach", "peer": self.peers, "channel": "c1",
                   "role": "research", "model": "claude-test",
                   "max_calls": 72}, fds=[theirs.fileno()])
        theirs.close()
        mine.settimeout(30)
        self.addCleanup(mine.close)
        return mine



class EgressProcess(EgressBase):
    """EGR_FETCH from the supervisor and from a research job's edge, an MCP
    call refused to research, and a research edge that goes away with a
    fetch running."""

    def test_supervisor_fetch(self):
        dns.set("sup.test", a=[ALT], aaaa=[])
        self.send(self.fetch_msg(7, fx.url("/body?n=300000&enc=gzip",
                                           host="sup.test")))
        obj, data = self.recv()
        self.assertEqual(obj["t"], "egr_fetched")
        self.assertEqual(obj["id"], 7)
        self.assertTrue(obj["ok"], obj)
        self.assertEqual(obj["status"], 200)
        self.assertEqual(obj["url"], fx.url("/body?n=300000&enc=gzip",
                                            host="sup.test"))
        self.assertEqual(obj["content_type"], "application/octet-stream")
        self.assertEqual(data, body_bytes(300000))
        self.assertEqual(fx.requests()[0]["local"][0], ALT)
        # The host log names the host, never the body.
        log = self.logtext()
        self.assertIn("sup.test: 200, 300000 bytes", log)
        if os.environ.get("FETCH_TEST_SHOW_LOG"):
            sys.stderr.write(log)
        self.assertNotIn("quick brown fox", log)

    def test_supervisor_refusals_and_ranges(self):
        dns.set("priv.test", a=["10.0.0.1"], aaaa=[])
        self.send(self.fetch_msg(1, fx.url("/page", host="priv.test")))
        self.send(self.fetch_msg(2, fx.url("/page"), max_bytes=0))
        self.send(self.fetch_msg(3, fx.url("/page"), deadline=120001))
        self.send(self.fetch_msg(4, fx.url("/page"), redirects=11))
        self.send(self.fetch_msg(5, "http://0x0a000001/"))
        got = {}
        for _ in range(5):
            obj, data = self.recv()
            got[obj["id"]] = obj
            self.assertFalse(obj["ok"])
            self.assertEqual(data, b"")
        self.assertEqual(got[1]["error"],
                         "priv.test: address 10.0.0.1 is not public")
        self.assertEqual(got[2]["error"], "max_bytes must be 1-33554432")
        self.assertEqual(got[3]["error"], "deadline_ms must be 1-120000")
        self.assertEqual(got[4]["error"], "max_redirects must be 0-10")
        self.assertEqual(got[5]["error"], "address 10.0.0.1 is not public")
        self.assertEqual(fx.conns(), [])

    def test_research_edge(self):
        res = self.attach_research()
        self.send(self.fetch_msg(11, fx.url("/page")), sock=res)
        self.send(self.fetch_msg(12, fx.url("/redirect?to=/page"),
                                 redirects=0), sock=res)
        got = {}
        for _ in range(2):
            obj, data = self.recv(res)
            got[obj["id"]] = (obj, data)
        self.assertTrue(got[11][0]["ok"])
        self.assertEqual(got[11][1], PAGE)
        self.assertEqual(got[12][0]["status"], 302)
        self.assertEqual(got[12][0]["location"], fx.url("/page"))
        # An MCP call is not for a research job: refused before anything
        # else, and reported to the supervisor as a violation.
        self.send({"t": "egr_call", "call": 1, "kind": "mcp",
                   "path": "/mcp", "server": "x", "hnames": [],
                   "hvalues": []}, sock=res)
        obj, _ = _read_frame(res)
        self.assertEqual(obj, {"t": "egr_end", "call": 1, "ok": False,
                               "status": 403, "error": "refused"})
        self.assertEqual(self.recv()[0], {"t": "egr_violation",
                                          "peer": self.peers,
                                          "rule": "kind"})
        self.assertIn("an MCP call from a research job", self.logtext())
        # Egress goes on.
        self.send({"t": "ping", "id": 99})
        self.assertEqual(self.recv()[0], {"t": "pong", "id": 99})

    def test_research_gone_cancels_its_fetch(self):
        res = self.attach_research()
        self.send(self.fetch_msg(21, fx.url("/slow?ms=3000")), sock=res)
        deadline = time.monotonic() + 10
        while not fx.requests() and time.monotonic() < deadline:
            time.sleep(0.02)
        self.assertEqual(len(fx.requests()), 1)
        res.close()
        self.send({"t": "ping", "id": 5})
        self.assertEqual(self.recv()[0], {"t": "pong", "id": 5})
        # No answer is sent anywhere, and the log says nothing was fetched.
        time.sleep(0.3)
        self.assertNotIn("fetch public.test: 200", self.logtext())

    def test_several_at_once(self):
        res = self.attach_research()
        for i in range(1, 7):
            url = fx.url("/body?n=%d" % (i * 1000))
            self.send(self.fetch_msg(30 + i, url), sock=res)
        seen = {}
        for _ in range(6):
            obj, data = self.recv(res)
            seen[obj["id"]] = len(data)
        self.assertEqual(seen, {30 + i: i * 1000 for i in range(1, 7)})


def _hosts_names():
    names = {}
    try:
        with open("/etc/hosts") as f:
            for line in f:
                parts = line.split("#")[0].split()
                for n in parts[1:]:
                    names.setdefault(n.lower(), parts[0])
    except OSError:
        pass
    return names


class EgressSystemResolver(EgressBase):
    """Without the seams: /etc/resolv.conf and /etc/hosts are read inside
    the sandbox, and loopback is not public."""
    TEST_SEAMS = False

    def test_hosts_file_in_the_sandbox(self):
        first = _hosts_names().get("localhost")
        if first is None:
            self.skipTest("no localhost in /etc/hosts")
        self.send({"t": "egr_fetch", "id": 1,
                   "url": "http://LocalHost:%d/page" % fx.http_port,
                   "deadline_ms": 5000, "max_bytes": 1000,
                   "max_redirects": 0})
        obj, _ = self.recv()
        self.assertFalse(obj["ok"])
        self.assertIn("localhost: address ", obj["error"])
        self.assertIn(" is not public", obj["error"])
        self.assertEqual(fx.conns(), [])
        self.assertNotIn("unusable", self.logtext())

    def test_seams_refused_in_release_fields(self):
        # A literal loopback address is not public without the seam.
        self.send({"t": "egr_fetch", "id": 2,
                   "url": "http://127.0.0.1:%d/page" % fx.http_port,
                   "deadline_ms": 5000, "max_bytes": 1000,
                   "max_redirects": 0})
        obj, _ = self.recv()
        self.assertEqual(obj["error"], "address 127.0.0.1 is not public")


if __name__ == "__main__":
    unittest.main(verbosity=2)
