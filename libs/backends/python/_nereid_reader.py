"""Leader/follower reading of the server socket.

There is no dedicated reader thread (a thread hop costs tens of microseconds per request). Whichever
thread waits for something (the main loop for its next command, a BLS caller for its answer) becomes
the reader when nobody else reads, reads one frame, dispatches it, and hands the role on. A wake pipe
interrupts the reader when what it waits for completes elsewhere (e.g. an async execute finishing).
"""

import os
import select
import threading


class Reader:
    def __init__(self, conn, dispatch):
        self._conn = conn
        self._dispatch = dispatch  # frame (or None at EOF) -> None; must not block
        self._cond = threading.Condition()
        self._reading = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)

    def wake(self):
        """Makes waiters re-check their condition."""
        try:
            os.write(self._wake_w, b"w")
        except BlockingIOError:
            pass
        with self._cond:
            self._cond.notify_all()

    def wait_until(self, done):
        """Blocks until done() is true, reading and dispatching frames meanwhile when nobody else does."""
        while True:
            with self._cond:
                while not done() and self._reading:
                    self._cond.wait()
                if done():
                    return
                self._reading = True
            try:
                self._read_once(block=True)
            finally:
                self._release()

    def poll(self):
        """Dispatches frames that already arrived, without blocking (used by is_cancelled)."""
        with self._cond:
            if self._reading:
                return
            self._reading = True
        try:
            while self._read_once(block=False):
                pass
        finally:
            self._release()

    def _release(self):
        with self._cond:
            self._reading = False
            self._cond.notify_all()

    def _read_once(self, block):
        fd = self._conn.fd
        if not self._conn.has_buffered():
            ready, _, _ = select.select([fd, self._wake_r], [], [], None if block else 0)
            if self._wake_r in ready:
                self._drain_wake()
            if fd not in ready:
                return False
        self._dispatch(self._conn.recv())
        return True

    def _drain_wake(self):
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
