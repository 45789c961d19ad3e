"""`pb_utils.TritonError`, `pb_utils.TritonModelException` and error text helpers."""

import traceback


class TritonError:
    """An error a model returns in an InferenceResponse; codes are TRITONSERVER_Error_Code values."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7

    def __init__(self, message, code=INTERNAL):
        if message is None or code is None:
            raise TypeError("TritonError message and code cannot be None")
        self._message = str(message)
        self._code = int(code)

    def message(self):
        return self._message

    def code(self):
        return self._code

    def __repr__(self):
        return "TritonError(%r, %d)" % (self._message, self._code)


class TritonModelException(Exception):
    """Raised by models to fail initialize/execute/finalize, and by the stub on API misuse."""


def describe_exception(exc):
    """`<Type>: <message>` then `At:` and one `  file(line): function` line per frame, innermost first."""
    frames = traceback.extract_tb(exc.__traceback__)
    lines = ["%s: %s" % (type(exc).__name__, exc), "", "At:"]
    for frame in reversed(frames):
        lines.append("  %s(%d): %s" % (frame.filename, frame.lineno, frame.name))
    return "\n".join(lines)


def format_traceback(exc):
    """Python's usual traceback text."""
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
