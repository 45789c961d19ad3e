"""Nereid's python backend stub: one process per model instance.

Usage: python3 -u stub.py <fd> <shm dir> <shm file prefix> <shm threshold bytes>

The server talks to this process over the socket inherited as <fd> (see _nereid_ipc for the frame
format). stdout and stderr stay free for the model's own prints; the server forwards them to its log.
"""

import os
import signal
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path[0] != _HERE:
    sys.path.insert(0, _HERE)

import _nereid_ipc as ipc  # noqa: E402
import _nereid_types  # noqa: E402
from _nereid_errors import describe_exception, format_traceback  # noqa: E402
from _nereid_runner import ModelRunner, auto_complete, import_model_module  # noqa: E402
from _nereid_runtime import Runtime  # noqa: E402


def _load_class(header):
    return import_model_module(header["file"], header["modelDir"], header["versionDir"])


def _handle_autocomplete(runtime, header):
    try:
        config = auto_complete(_load_class(header), header["config"])
        runtime.conn.send(ipc.MSG_AUTOCOMPLETE_DONE, {"config": config})
    except Exception as e:
        runtime.conn.send(ipc.MSG_AUTOCOMPLETE_DONE, {"err": describe_exception(e), "tb": format_traceback(e)})


def _handle_init(runtime, header):
    runtime.decoupled = bool(header.get("decoupled", False))
    try:
        runner = ModelRunner(runtime, _load_class(header), header["instance"], header["model"])
        runner.initialize(header["args"])
    except Exception as e:
        runtime.conn.send(ipc.MSG_READY, {"err": describe_exception(e), "tb": format_traceback(e)})
        return None
    runtime.conn.send(ipc.MSG_READY, {})
    return runner


def _handle_finalize(runtime, runner):
    if runner is not None:
        try:
            runner.finalize()
        except Exception as e:
            runtime.conn.send(ipc.MSG_LOG, {"l": "info", "m": "finalize failed: " + describe_exception(e)})
    runtime.conn.send(ipc.MSG_FINALIZED, {})


def _ignore_shutdown_signals():
    """Ctrl-C and systemd signal the server's whole process group: the server drains its in-flight
    requests and then finalizes this stub itself. Should the server die instead, the socket reaches
    EOF and the stub exits (see main)."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def main(argv):
    _ignore_shutdown_signals()
    fd, shm_dir, shm_prefix, threshold = int(argv[1]), argv[2], argv[3], int(argv[4])
    conn = ipc.Connection(fd, shm_dir, shm_prefix, threshold)
    runtime = Runtime(conn)
    _nereid_types.runtime = runtime
    runner = None
    while True:
        frame = runtime.next_command()
        if frame is None:  # the server went away
            conn.remove_shm_files()
            os._exit(0)
        msg_type, header, blob = frame
        if msg_type == ipc.MSG_EXECUTE:
            runner.execute(header, blob)
        elif msg_type == ipc.MSG_INIT:
            runner = _handle_init(runtime, header)
        elif msg_type == ipc.MSG_AUTOCOMPLETE:
            _handle_autocomplete(runtime, header)
        elif msg_type == ipc.MSG_FINALIZE:
            _handle_finalize(runtime, runner)
            sys.stdout.flush()
            os._exit(0)


if __name__ == "__main__":
    main(sys.argv)
