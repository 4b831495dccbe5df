#!/usr/bin/env python3
"""Opens an HTML file in headless Chromium over the DevTools protocol (--remote-debugging-pipe,
standard library only) and fails on any console error, uncaught exception or failed resource load.
Saves a full-page screenshot either way.

Usage: check_html.py HTML_FILE SCREENSHOT_PNG
Exit: 0 clean, 1 the page reported errors (each printed as "page error: ..."), 2 could not check.
Environment: CHROMIUM (default /usr/bin/chromium), CHECK_HTML_TIMEOUT (seconds, default 60).
"""
import base64
import fcntl
import json
import os
import pathlib
import select
import subprocess
import sys
import tempfile
import time

FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--disable-default-apps", "--no-default-browser-check",
    "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe",
]
SETTLE_S = 0.5  # quiet time after the load event, for late errors (timers, promise rejections)
WIDTH = 1280


class CheckError(Exception):
    """The check itself could not run (exit 2)."""


class Browser:
    """One Chromium process and its DevTools pipe (fd 3: commands in, fd 4: replies out)."""

    def __init__(self, exe, profile, deadline):
        self.deadline = deadline
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def child_fds():  # runs in the child: move the pipe ends to fds 3 and 4 (inheritable)
            r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            close_fds=False, preexec_fn=child_fds)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.send("Browser.close", wait=False)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)

    def browser_log(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def _read_message(self, timeout):
        while b"\0" not in self.buf:
            left = min(timeout, self.deadline - time.monotonic())
            if left <= 0:
                return None
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if not ready:
                return None
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise CheckError("the browser closed the DevTools pipe\n" + self.browser_log())
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def send(self, method, params=None, session=None, wait=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        if not wait:
            return None
        while True:
            reply = self._read_message(self.deadline - time.monotonic())
            if reply is None:
                raise CheckError(f"timed out waiting for {method}")
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise CheckError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def pump(self, seconds):
        """Collects events for `seconds` (or until the deadline)."""
        end = min(time.monotonic() + seconds, self.deadline)
        while time.monotonic() < end:
            msg = self._read_message(end - time.monotonic())
            if msg is not None and "method" in msg:
                self.events.append(msg)

    def take_events(self):
        out, self.events = self.events, []
        return out


def describe_remote(args):
    parts = []
    for a in args:
        if "value" in a:
            parts.append(str(a["value"]))
        else:
            parts.append(a.get("description", a.get("type", "?")))
    return " ".join(parts)


def page_errors(event, urls):
    """The error(s) one DevTools event reports, as lines ([] when it is not an error).
    `urls` maps request ids to URLs (filled from Network.requestWillBeSent)."""
    method, p = event.get("method"), event.get("params", {})
    if method == "Network.requestWillBeSent":
        urls[p.get("requestId")] = p.get("request", {}).get("url", "?")
    if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
        return [f"console.{p['type']}: {describe_remote(p.get('args', []))}"]
    if method == "Runtime.exceptionThrown":
        d = p.get("exceptionDetails", {})
        exc = d.get("exception", {})
        text = exc.get("description") or d.get("text", "exception")
        where = f" ({d.get('url', '')}:{d.get('lineNumber', 0) + 1})" if d.get("url") else ""
        return [f"uncaught exception: {text.splitlines()[0]}{where}"]
    if method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
        e = p["entry"]
        return [f"log error ({e.get('source')}): {e.get('text')} {e.get('url', '')}".rstrip()]
    if method == "Network.loadingFailed" and not p.get("canceled"):
        return [f"failed resource load: {p.get('errorText')} {urls.get(p.get('requestId'), '?')} ({p.get('type')})"]
    if method == "Network.responseReceived":
        r = p.get("response", {})
        if r.get("status", 200) >= 400:
            return [f"failed resource load: HTTP {r['status']} {r.get('url')}"]
    if method == "Inspector.targetCrashed":
        return ["the page crashed"]
    return []


def check(html, png, exe, timeout):
    url = pathlib.Path(html).resolve().as_uri()
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory(prefix="check-html-") as profile:
        try:
            browser = Browser(exe, profile, deadline)
        except OSError as e:
            raise CheckError(f"cannot start {exe}: {e}")
        try:
            target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            for domain in ("Page", "Runtime", "Log", "Network", "Inspector"):
                browser.send(f"{domain}.enable", session=session)
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=session)
            browser.take_events()  # about:blank's
            nav = browser.send("Page.navigate", {"url": url}, session=session)
            errors = []
            if nav.get("errorText"):
                errors.append(f"navigation failed: {nav['errorText']}")
            loaded = False
            while not loaded and not errors and time.monotonic() < deadline:
                browser.pump(0.1)
                for ev in browser.events:
                    if ev.get("method") == "Page.loadEventFired" and ev.get("sessionId") == session:
                        loaded = True
            if not loaded and not errors:
                errors.append("the page did not finish loading")
            browser.pump(SETTLE_S)
            height = browser.send("Runtime.evaluate", {
                "expression": "Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)",
                "returnByValue": True}, session=session)["result"].get("value") or 900
            browser.send("Emulation.setDeviceMetricsOverride",
                         {"width": WIDTH, "height": min(int(height), 16000), "deviceScaleFactor": 1, "mobile": False},
                         session=session)
            shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
            pathlib.Path(png).parent.mkdir(parents=True, exist_ok=True)
            pathlib.Path(png).write_bytes(base64.b64decode(shot["data"]))
            browser.pump(0.1)
            urls = {}
            for ev in browser.take_events():
                errors.extend(page_errors(ev, urls))
            return errors
        finally:
            browser.close()


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    html, png = argv[1], argv[2]
    if not os.path.isfile(html):
        print(f"check-html: {html}: no such file", file=sys.stderr)
        return 2
    exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    try:
        errors = check(html, png, exe, float(os.environ.get("CHECK_HTML_TIMEOUT", "60")))
    except CheckError as e:
        print(f"check-html: could not check {html}: {e}", file=sys.stderr)
        return 2
    for e in errors:
        print(f"page error: {e}")
    print(f"check-html: {html}: {len(errors)} error(s); screenshot {png}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
