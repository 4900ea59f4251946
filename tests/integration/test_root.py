"""rtsandboxd refuses uid 0 and gid 0 and says how to run it instead."""

import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import rtsb  # noqa: E402


class RefuseRoot(unittest.TestCase):
    @unittest.skipUnless(os.getuid() == 0, "needs root")
    def test_refuses_uid_0(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([rtsb.RTSANDBOXD, "-d", "-f",
                                os.path.join(tmp, "none.json")],
                               capture_output=True, text=True, timeout=10)
        self.assertEqual(r.returncode, 1)
        self.assertIn("refusing to run with uid 0", r.stderr)
        self.assertIn("runuser -u rtsandbox", r.stderr)

    @unittest.skipUnless(os.getuid() == 0, "needs root")
    def test_doctor_fails_as_root(self):
        """doctor says what root can reach is not what the service user
        can, and fails."""
        with tempfile.TemporaryDirectory() as tmp:
            r = subprocess.run([rtsb.RTSANDBOXCTL, "doctor", "-f",
                                os.path.join(tmp, "none.json")],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAIL  user: uid 0, gid 0", r.stdout)
        self.assertIn("run this as the service user", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
