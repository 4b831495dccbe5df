"""The turn: two timing runs take turns step by step (docs/method.md "Timing in turns").

Lockstep hands each run one end of a socket pair as LOCKSTEP_TURN_FD. A run waits for one byte
before its step's clock starts and sends one byte after the step, so the two arms' steps
alternate and share whatever the host is doing then. A peer that has gone (end of file, an error)
ends the turns: this run goes on alone and never blocks again.
"""

import os
import socket


class Turn:
    ENV = "LOCKSTEP_TURN_FD"

    def __init__(self, fd=None):
        self._sock = None
        self.ended = ""  # why turns stopped ("" while active or never started)
        if fd is None:
            value = os.environ.pop(self.ENV, None)  # not inherited by what this run starts
            if value is None or not value.isdigit():
                return
            fd = int(value)
        if fd < 0:
            return
        try:
            self._sock = socket.socket(fileno=fd)
        except OSError:
            self._sock = None

    @property
    def active(self):
        return self._sock is not None

    def _stop(self, why):
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if not self.ended:
            self.ended = why

    def wait(self):
        """Blocks until the peer hands over the turn (nothing when inactive)."""
        if self._sock is None:
            return
        try:
            if self._sock.recv(1) == b"":
                self._stop("the peer finished")
        except OSError as e:
            self._stop("recv: %s" % e)

    def hand_over(self):
        """Gives the turn to the peer (nothing when inactive)."""
        if self._sock is None:
            return
        try:
            self._sock.send(b"t")
        except OSError as e:
            self._stop("send: %s" % e)

    def finish(self):
        """After the last step: waits for the peer's next step to end, then closes."""
        self.wait()
        self._stop("this run finished")

    def __enter__(self):
        self.wait()
        return self

    def __exit__(self, *exc):
        self.hand_over()
        return False
