"""Framing between the Nereid server and this stub.

A frame is `u32 LE body length` + body; the body is `u8 type, 3 pad bytes, u32 LE header length`,
a JSON header (metadata only: names, shapes, ids), zero padding to an 8-byte boundary, then a blob
of raw tensor bytes.

The frames sent for every request (EXECUTE, EXECUTE_DONE, RESPONSE) have JSON arrays as headers,
fields by position (cheaper to parse and build on both sides than objects); the other frames have
JSON objects. Positional forms:

- tensor descriptor: `[name, datatype, shape, byte length, where]`; `where` is an int (offset of
  the bytes in the blob), a string (path of a shared-memory file holding them, see below), or, from
  the stub only, a one-element list `[i]`: the tensor is input number `i` of the same request,
  unchanged (pass-through models), and the server reuses its own bytes;
- response entry: `[descriptors]` or `[descriptors, parameters JSON text]` (parameters only when not
  `{}`), or an object `{"m": message, "c": TritonError code}` for an error;
- EXECUTE (server -> stub): `[batch id, [request, ...]]`, a request being
  `[id, correlation id, flags, parameters JSON text, requested output names or null, timeout µs,
  [input descriptors], trace context or null]`; the correlation id is a number, a string (string
  ids), or `[digits]` for an integer beyond 2^53; the trace context is what
  `request.trace().get_context()` returns (OpenTelemetry mode, traced requests only);
- EXECUTE_DONE (stub -> server): `[batch id, [entry or null per request]]` (null: the request is
  answered through its response sender instead), plus a third element `[request index, ...]`
  naming the requests that were not executed (cancelled before `execute` began) when there are
  any, or `[batch id, error message]` when the whole batch failed;
- RESPONSE (stub -> server, response sender): `[batch id, request index, final flag, entry or null]`.
Batch ids are opaque to the stub (the server numbers requests, a batch's id being its first one's).
CANCEL is `{"b": batch id, "i": request index}`. BLS_REQUEST and BLS_RESULT keep object headers
whose tensors (`in`) and response (`r`) use the forms above.

Large tensors travel through files in /dev/shm instead of the blob. Those files are pooled: each
side writes into files it owns and reuses them once the other side says it is done with them, in a
RELEASE frame (header: the JSON array of their paths) written just before its next frame, in the
same write. Writing into an existing tmpfs file costs a copy; creating one costs a page allocation
per 4 KiB on top, which is three times slower. The stub maps the server's files privately and
releases one when the last array over its mapping is gone, so a model may keep its inputs as long
as it likes.
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
# Both ways
MSG_RELEASE = 20

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
# numpy dtype objects (faster to hand to np.frombuffer than the scalar types)
WIRE_TO_DTYPE = {k: np.dtype(v) for k, v in WIRE_TO_NUMPY.items()}

_NUMPY_TO_WIRE = {np.dtype(v): k for k, v in WIRE_TO_NUMPY.items() if k != "BF16"}


def wire_type_of(dtype):
    """numpy dtype -> wire datatype name, or None when unsupported."""
    wire = _NUMPY_TO_WIRE.get(dtype)
    if wire is not None:
        return wire
    if dtype == np.object_ or dtype.type == np.bytes_:
        return "BYTES"
    return _NUMPY_TO_WIRE.get(np.dtype(dtype))


def _make_encode():
    """str(JSON) of a header. The C encoder is made once (JSONEncoder.encode makes one per call)."""
    fallback = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii

        encoder = c_make_encoder(None, None, encode_basestring_ascii, None, ":", ",", False, False, True)
        probe = [1, -2.5, "\u00e9\"", None, True, (3, 4), {"k": [{}, []]}]
        if "".join(encoder(probe, 0)) != fallback(probe):
            return fallback
    except Exception:  # no C accelerator, or another signature in this Python version
        return fallback

    def encode(obj):
        return "".join(encoder(obj, 0))

    return encode


encode_json = _make_encode()
_decode_json = json.JSONDecoder().raw_decode

_U32 = struct.Struct("<I")
_PREFIX = struct.Struct("<IB3xI")  # body length, type, header length
_BODY_HEAD = struct.Struct("<B3xI")  # type, header length
_PADS = tuple(b"\0" * ((8 - i) % 8) for i in range(8))  # _PADS[n & 7]: zeros up to the next 8-byte boundary
_READ_BUFFER = 1 << 16


class FrameBuilder:
    """Collects tensor payloads for one outgoing frame."""

    __slots__ = ("_conn", "parts", "size")

    def __init__(self, conn):
        self._conn = conn
        self.parts = []
        self.size = 0

    def add(self, name, datatype, shape, payload):
        """payload: a bytes-like object (C-contiguous). Returns the tensor descriptor."""
        view = memoryview(payload).cast("B")
        length = view.nbytes
        if length >= self._conn.shm_threshold:
            try:
                return [name, datatype, [int(d) for d in shape], length, self._conn.write_shm(view)]
            except OSError:
                pass  # /dev/shm full or unusable: the bytes go inline in the frame instead
        return [name, datatype, [int(d) for d in shape], length, self._inline(view, length)]

    def add_array(self, name, datatype, array):
        """Like add, for a C-contiguous numeric array (its bytes are copied when the frame is sent)."""
        length = array.nbytes
        if length >= self._conn.shm_threshold:
            return self.add(name, datatype, array.shape, array.reshape(-1).view(np.uint8))
        offset = self.size  # self._inline, inlined
        self.parts.append(array)
        pad = _PADS[length & 7]
        if pad:
            self.parts.append(pad)
        self.size = offset + length + len(pad)
        return [name, datatype, array.shape, length, offset]

    def _inline(self, payload, length):
        offset = self.size
        self.parts.append(payload)
        pad = _PADS[length & 7]
        if pad:
            self.parts.append(pad)
        self.size = offset + length + len(pad)
        return offset


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
        self._done_with = []  # server files this stub no longer maps (sent in the next RELEASE frame)
        self.shm_threshold = shm_threshold
        # Bytes read from the socket and not consumed yet: self._rbuf[self._pos:self._end]
        self._rbuf = bytearray(_READ_BUFFER)
        self._rview = memoryview(self._rbuf)
        self._pos = 0
        self._end = 0

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
        head = encode_json(header).encode()
        head_len = len(head)
        pad = _PADS[head_len & 7]  # 8 + head_len is aligned when head_len is
        data = [None, head, pad]
        blob_size = 0
        if builder is not None and builder.parts:
            blob_size = builder.size
            data += builder.parts
        data[0] = _PREFIX.pack(8 + head_len + len(pad) + blob_size, msg_type, head_len)
        if self._done_with:
            done = []
            while self._done_with:
                done.append(self._done_with.pop())
            release = encode_json(done).encode()
            data[0:0] = [_PREFIX.pack(8 + len(release) + len(_PADS[len(release) & 7]), MSG_RELEASE, len(release)),
                         release, _PADS[len(release) & 7]]
        with self._lock:
            if blob_size < 65536:
                data = b"".join(data)
                n = os.write(self._fd, data)
                if n != len(data):  # short write: the socket buffer is full
                    _write_all(self._fd, memoryview(data)[n:])
            else:
                for part in data:
                    _write_all(self._fd, part)

    @property
    def fd(self):
        return self._fd

    def has_buffered(self):
        """True when bytes of a next frame were already read from the socket."""
        return self._end > self._pos

    def _fill(self):
        """Reads what the socket has (blocking until something) into the buffer; False at EOF."""
        if self._pos == self._end:
            self._pos = self._end = 0
        elif self._end == _READ_BUFFER:  # full: move the unread bytes to the front
            rest = self._end - self._pos
            self._rbuf[:rest] = self._rview[self._pos:self._end]
            self._pos, self._end = 0, rest
        n = os.readv(self._fd, [self._rview[self._end:]])
        if not n:
            return False
        self._end += n
        return True

    def recv(self):
        """Blocks for one frame. Returns (type, header, blob memoryview) or None at EOF.

        RELEASE frames are handled here and never returned.
        """
        while True:
            if self._pos == self._end:  # nothing buffered (the usual case): one read, from the start
                n = os.readv(self._fd, [self._rview])
                if not n:
                    return None
                self._pos, self._end = 0, n
            while self._end - self._pos < 4:
                if not self._fill():
                    return None
            (body_len,) = _U32.unpack_from(self._rbuf, self._pos)
            start = self._pos + 4
            stop = start + body_len
            if stop > self._end:
                if 4 + body_len <= _READ_BUFFER:
                    if stop > _READ_BUFFER:  # make room: move the partial frame to the front
                        self._rbuf[:self._end - self._pos] = self._rview[self._pos:self._end]
                        self._end -= self._pos
                        self._pos = 0
                        start, stop = 4, 4 + body_len
                    while self._end < stop:
                        if not self._fill():
                            return None
                else:
                    body = self._read_large(start, body_len)
                    if body is None:
                        return None
            if stop <= self._end:
                body = self._rbuf[start:stop]  # a copy: the frame's arrays own it
                self._pos = stop
            msg_type, head_len = _BODY_HEAD.unpack_from(body)
            header = _decode_json(body[8:8 + head_len].decode())[0]
            if msg_type == MSG_RELEASE:
                self._pool.release(header)
                continue
            return msg_type, header, memoryview(body)[(8 + head_len + 7) & ~7:]

    def _read_large(self, start, body_len):
        """A body larger than the read buffer: what is buffered, then straight from the socket."""
        body = bytearray(body_len)
        view = memoryview(body)
        have = self._end - start
        view[:have] = self._rview[start:self._end]
        self._pos = self._end = 0
        while have < body_len:
            n = os.readv(self._fd, [view[have:]])
            if not n:
                return None
            have += n
        return body


def _write_all(fd, data):
    n = os.write(fd, data)
    if n == (len(data) if type(data) is bytes else memoryview(data).nbytes):
        return
    view = memoryview(data).cast("B")[n:]
    while view.nbytes:
        view = view[os.write(fd, view):]


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


def read_tensor_bytes(conn, length, where, blob):
    """The raw bytes of a received tensor as a writable buffer (no copy when possible)."""
    if isinstance(where, str):
        return conn.map_shm(where, length)
    return blob[where:where + length]
