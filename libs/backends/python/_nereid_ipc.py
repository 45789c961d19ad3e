"""Framing between the Nereid server and this stub.

A frame is `u32 LE body length` + body; the body is `u8 type, 3 pad bytes, u32 LE header length`,
a JSON header (metadata only: names, shapes, ids), zero padding to an 8-byte boundary, then a blob
of raw tensor bytes. Tensor descriptors in the header point into the blob (`o` offset, `l` length)
or, for large tensors, name a file in /dev/shm (`f`).

Those files are pooled: each side writes into files it owns and reuses them once the other side
says it is done with them (the paths it lists in the `rel` key of any later header). Writing into
an existing tmpfs file costs a copy; creating one costs a page allocation per 4 KiB on top, which
is three times slower. The stub maps the server's files privately and releases one when the last
array over its mapping is gone, so a model may keep its inputs as long as it likes.
"""

import json
import mmap
import os
import struct
import threading
import weakref

import numpy as np

# Server -> stub
MSG_INIT = 1
MSG_EXECUTE = 2
MSG_BLS_RESULT = 3
MSG_CANCEL = 4
MSG_FINALIZE = 5
MSG_AUTOCOMPLETE = 6
# Stub -> server
MSG_READY = 10
MSG_EXECUTE_DONE = 11
MSG_RESPONSE = 12
MSG_BLS_REQUEST = 13
MSG_LOG = 14
MSG_FINALIZED = 15
MSG_AUTOCOMPLETE_DONE = 16
MSG_BLS_CANCEL = 17

WIRE_TO_NUMPY = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
    "BF16": np.uint16,  # raw bits; as_numpy() refuses BF16 tensors
}

_NUMPY_TO_WIRE = {np.dtype(v): k for k, v in WIRE_TO_NUMPY.items() if k != "BF16"}


def wire_type_of(dtype):
    """numpy dtype -> wire datatype name, or None when unsupported."""
    if dtype == np.object_ or dtype.type == np.bytes_:
        return "BYTES"
    return _NUMPY_TO_WIRE.get(np.dtype(dtype))


# One encoder for every header: json.dumps with non-default separators builds a new one per call.
_HEADER_ENCODER = json.JSONEncoder(separators=(",", ":"))


def _pad8(n):
    return (8 - n % 8) % 8


class FrameBuilder:
    """Collects tensor payloads for one outgoing frame."""

    def __init__(self, conn):
        self._conn = conn
        self.parts = []
        self.size = 0

    def add(self, name, datatype, shape, payload):
        """payload: a bytes-like object (C-contiguous). Returns the tensor descriptor."""
        view = memoryview(payload).cast("B")
        length = view.nbytes
        desc = {"n": name, "t": datatype, "s": [int(d) for d in shape], "l": length}
        if length >= self._conn.shm_threshold:
            try:
                desc["f"] = self._conn.write_shm(view)
                return desc
            except OSError:
                pass  # /dev/shm full or unusable: the bytes go inline in the frame instead
        desc["o"] = self.size
        self.parts.append(view)
        pad = _pad8(length)
        if pad:
            self.parts.append(b"\0" * pad)
        self.size += length + pad
        return desc


class _ShmFile:
    """A file of the stub's pool, mapped shared for writing."""

    __slots__ = ("path", "fd", "map", "capacity")

    def __init__(self, path):
        self.path = path
        self.fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_TRUNC, 0o600)
        self.map = None
        self.capacity = 0

    def write(self, view):
        length = view.nbytes
        if length > self.capacity:
            if self.map is not None:
                self.map.close()
            # Reserve the pages now: a write through the mapping into a full tmpfs would be a SIGBUS,
            # posix_fallocate is an OSError (ENOSPC) the caller can handle.
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(self.fd, 0, length)
            else:  # macOS: no fallocate; a full disk shows as an error only when written
                os.ftruncate(self.fd, length)
            self.map = mmap.mmap(self.fd, length)
            self.capacity = length
        self.map[:length] = view

    def destroy(self):
        if self.map is not None:
            self.map.close()
        os.close(self.fd)
        try:
            os.unlink(self.path)
        except OSError:
            pass


class ShmPool:
    """Files this stub writes large tensors into; the server hands each back once it has read it."""

    MAX_FREE = 2  # per stub; /dev/shm is often small (64 MB in a default Docker container)

    def __init__(self, shm_dir, prefix):
        self._dir = shm_dir
        self._prefix = prefix
        self._counter = 0
        self._free = []
        self._busy = {}
        self._lock = threading.Lock()

    def write(self, view):
        """Copies `view` into a free file (growing it if needed); returns the file's path."""
        length = view.nbytes
        with self._lock:
            fitting = [f for f in self._free if f.capacity >= length]
            chosen = min(fitting, key=lambda f: f.capacity) if fitting else (
                max(self._free, key=lambda f: f.capacity) if self._free else None)
            if chosen is not None:
                self._free.remove(chosen)
            else:
                self._counter += 1
                chosen = _ShmFile(os.path.join(self._dir, "%sp%d" % (self._prefix, self._counter)))
            self._busy[chosen.path] = chosen
        try:
            chosen.write(view)
        except BaseException:
            with self._lock:
                del self._busy[chosen.path]
            chosen.destroy()
            raise
        return chosen.path

    def release(self, paths):
        with self._lock:
            for path in paths:
                shm_file = self._busy.pop(path, None)
                if shm_file is None:
                    continue
                if len(self._free) < self.MAX_FREE:
                    self._free.append(shm_file)
                else:
                    shm_file.destroy()


class Connection:
    """One socket to the server; sends are serialized by a lock, receives by the Reader (one at a time)."""

    def __init__(self, fd, shm_dir, shm_prefix, shm_threshold):
        self._fd = fd
        self._lock = threading.Lock()
        self._shm_dir = shm_dir
        self._shm_prefix = shm_prefix
        self._pool = ShmPool(shm_dir, shm_prefix)
        self._done_with = []  # server files this stub no longer maps (sent in the next header)
        self.shm_threshold = shm_threshold
        self._buf = bytearray()
        self._pos = 0

    def builder(self):
        return FrameBuilder(self)

    def write_shm(self, view):
        return self._pool.write(view)

    def map_shm(self, path, length):
        """Maps a server file privately; the server gets it back once the mapping is garbage."""
        fd = os.open(path, os.O_RDONLY)
        try:
            mapped = mmap.mmap(fd, length, access=mmap.ACCESS_COPY)
        finally:
            os.close(fd)
        weakref.finalize(mapped, self._done_with.append, path)
        return mapped

    def remove_shm_files(self):
        """Unlinks every file of this stub's prefix (the server's and ours): the server is gone."""
        try:
            names = os.listdir(self._shm_dir)
        except OSError:
            return
        for name in names:
            if name.startswith(self._shm_prefix):
                try:
                    os.unlink(os.path.join(self._shm_dir, name))
                except OSError:
                    pass

    def send(self, msg_type, header, builder=None):
        if self._done_with:
            done = []
            while self._done_with:
                done.append(self._done_with.pop())
            header["rel"] = done
        head = _HEADER_ENCODER.encode(header).encode("utf-8")
        pad = _pad8(8 + len(head))
        blob_size = builder.size if builder else 0
        body_len = 8 + len(head) + pad + blob_size
        prefix = struct.pack("<IB3xI", body_len, msg_type, len(head))
        if builder is None or not builder.parts:
            data = [prefix + head + b"\0" * pad]
        else:
            data = [prefix + head + b"\0" * pad] + builder.parts
        with self._lock:
            if len(data) == 1 or blob_size < 65536:
                _write_all(self._fd, b"".join(data))
            else:
                for part in data:
                    _write_all(self._fd, part)

    @property
    def fd(self):
        return self._fd

    def has_buffered(self):
        """True when bytes of a next frame were already read from the socket."""
        return len(self._buf) > self._pos

    def _fill(self):
        chunk = os.read(self._fd, 1 << 16)
        if not chunk:
            return False
        if self._pos == len(self._buf):
            self._buf = bytearray(chunk)
        else:
            self._buf = self._buf[self._pos:] + chunk
        self._pos = 0
        return True

    def recv(self):
        """Blocks for one frame. Returns (type, header dict, blob memoryview) or None at EOF."""
        while len(self._buf) - self._pos < 4:
            if not self._fill():
                return None
        (body_len,) = struct.unpack_from("<I", self._buf, self._pos)
        self._pos += 4
        have = min(len(self._buf) - self._pos, body_len)
        body = bytearray(body_len)
        view = memoryview(body)
        view[:have] = self._buf[self._pos:self._pos + have]
        self._pos += have
        got = have
        while got < body_len:
            n = os.readv(self._fd, [view[got:]])
            if not n:
                return None
            got += n
        msg_type, head_len = struct.unpack_from("<B3xI", body, 0)
        header = json.loads(bytes(view[8:8 + head_len]))
        released = header.pop("rel", None)
        if released:
            self._pool.release(released)
        blob_start = 8 + head_len + _pad8(8 + head_len)
        return msg_type, header, view[blob_start:]


def _write_all(fd, data):
    view = memoryview(data).cast("B")
    while view.nbytes:
        n = os.write(fd, view)
        view = view[n:]


_PAGE = mmap.PAGESIZE


def pages_unmodified(address, length):
    """True when no page of a private file mapping was written (copied on write) by this process.

    Reads /proc/self/pagemap: a written page of a MAP_PRIVATE file mapping becomes anonymous (bit 61
    cleared) or may be swapped (bit 62). False when pagemap cannot be read.
    """
    first = address // _PAGE
    count = (address + length + _PAGE - 1) // _PAGE - first
    try:
        fd = os.open("/proc/self/pagemap", os.O_RDONLY)
        try:
            data = os.pread(fd, count * 8, first * 8)
        finally:
            os.close(fd)
    except OSError:
        return False
    if len(data) != count * 8:
        return False
    entries = np.frombuffer(data, dtype=np.uint64)
    present = (entries >> np.uint64(63)) & np.uint64(1)
    swapped = (entries >> np.uint64(62)) & np.uint64(1)
    file_page = (entries >> np.uint64(61)) & np.uint64(1)
    return not np.any(swapped | (present & (file_page ^ np.uint64(1))))


def read_tensor_bytes(conn, desc, blob):
    """The raw bytes of a received tensor descriptor as a writable buffer (no copy when possible)."""
    length = desc["l"]
    if "f" in desc:
        return conn.map_shm(desc["f"], length)
    offset = desc["o"]
    return blob[offset:offset + length]
