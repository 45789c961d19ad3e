"""Leader/follower reading of the server socket.

There is no dedicated reader thread (a thread hop costs tens of microseconds per request). Whichever
thread waits for something (the main loop for its next command, a BLS caller for its answer) becomes
the reader when nobody else reads, reads one frame, dispatches it, and hands the role on. A wake pipe
interrupts the reader when what it waits for completes elsewhere (e.g. an async execute finishing);
a reader whose condition only a frame can satisfy (the main loop's next command) skips it and blocks
in a plain read of the socket.
"""

import os
import select
import threading


class Reader:
    def __init__(self, conn, dispatch):
        self._conn = conn
        self._dispatch = dispatch  # frame (or None at EOF) -> None; must not block
        self._mutex = threading.Lock()  # `with self._mutex` is cheaper than `with self._cond` (same lock)
        self._cond = threading.Condition(self._mutex)
        self._reading = False
        self._waiting = 0  # threads in self._cond.wait()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def wake(self):
        """Makes waiters re-check their condition."""
        try:
            os.write(self._wake_w, b"w")
        except BlockingIOError:
            pass  # the pipe is full: the reader has wake-ups pending anyway
        with self._cond:
            self._cond.notify_all()

    def wait_until(self, done, wakeable=True):
        """Blocks until done() is true, reading and dispatching frames meanwhile when nobody else does.

        wakeable=False: only a frame can make done() true, so the reader needs no wake-up and reads
        the socket directly (one system call instead of select + read).
        """
        mutex = self._mutex
        conn = self._conn
        while True:
            with mutex:
                while self._reading and not done():
                    self._waiting += 1
                    try:
                        self._cond.wait()
                    finally:
                        self._waiting -= 1
                if done():
                    return
                self._reading = True
            try:
                if wakeable and not conn.has_buffered():
                    self._read_once(True)
                else:
                    self._dispatch(conn.recv())
            finally:
                with mutex:  # self._release(), inlined
                    self._reading = False
                    if self._waiting:
                        self._cond.notify_all()

    def poll(self):
        """Dispatches frames that already arrived, without blocking (used by is_cancelled)."""
        with self._mutex:
            if self._reading:
                return
            self._reading = True
        try:
            while self._read_once(False):
                pass
        finally:
            self._release()

    def _release(self):
        with self._mutex:
            self._reading = False
            if self._waiting:
                self._cond.notify_all()

    def _read_once(self, block):
        conn = self._conn
        if not conn.has_buffered():
            fd = conn.fd
            ready = select.select([fd, self._wake_r], [], [], None if block else 0)[0]
            if self._wake_r in ready:
                self._drain_wake()
            if fd not in ready:
                return False
        self._dispatch(conn.recv())
        return True

    def _drain_wake(self):
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass
