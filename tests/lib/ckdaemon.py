"""tests/lib/ckdaemon.py - an rtgtd for the Python tests, started as the
network tests start theirs (tests/README.md, "The network tests"): a fresh
/tmp/rtgt-py.XXXXXX (under $RTGT_TEST_TMP when set) holding rtgt.conf, the
member files and rtgtd.log; loopback ports picked free by binding port 0;
$RTGTD (else bin/rtgtd) started there, waited for (30 s at most) until the
iSCSI portal, the control socket and, when asked, the metrics port
answer; stopped with SIGTERM (SIGKILL after 30 s) and the directory
removed by stop(), also at exit. Raises RuntimeError with the log's tail
when the daemon does not come up."""
import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RTGTD = os.environ.get("RTGTD") or os.path.join(ROOT, "bin", "rtgtd")
RTGTCTL = os.environ.get("RTGTCTL") or os.path.join(ROOT, "bin", "rtgtctl")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


class Daemon:
    """@body: the configuration without its daemon block's control, and
    with PORT, and METRICS where wanted, to be replaced by the ports."""

    def __init__(self, body, metrics=False):
        self.dir = tempfile.mkdtemp(prefix="rtgt-py.", dir=os.environ.get("RTGT_TEST_TMP"))
        self.port = free_port()
        self.metrics_port = free_port() if metrics else None
        self.sock = os.path.join(self.dir, "rtgtd.sock")
        self.conf = os.path.join(self.dir, "rtgt.conf")
        self.log = os.path.join(self.dir, "rtgtd.log")
        text = body.replace("PORT", str(self.port))
        if metrics:
            text = text.replace("METRICS", str(self.metrics_port))
        with open(self.conf, "w") as f:
            f.write(text)
        self.proc = None
        atexit.register(self.stop)

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([RTGTD, "-c", self.conf], cwd=self.dir,
                                         stdout=log, stderr=log, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if (_accepts(self.port) and os.path.exists(self.sock) and
                    (self.metrics_port is None or _accepts(self.metrics_port))):
                return
            time.sleep(0.1)
        raise RuntimeError(f"rtgtd did not come up: {self.tail()}")

    def tail(self, n=20):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self):
        """The exit code (None when it was not running)."""
        rc = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait()
        elif self.proc:
            rc = self.proc.returncode
        self.proc = None
        if self.dir and os.path.isdir(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)
        return rc
