"""The two error classes of cvm-runtime, shared by every layer.

A logic error is the model's or the caller's fault (a bad attribute value, a shape or precision violation,
a param out of range, a wrong input length); a runtime error is ours or the system's (an unparsable file or
attribute, an unknown operator, an internal failure). `status` mirrors the C API's return code.
"""


class CVMError(Exception):
    """Base class of every error cvmc raises on bad input."""

    status = 0


class CVMLogicError(CVMError):
    """The model or the caller is at fault (CVM C API status 1)."""

    status = 1


class CVMRuntimeError(CVMError):
    """The file is malformed or something on our side failed (CVM C API status 2)."""

    status = 2
