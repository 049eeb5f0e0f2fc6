"""Debugging helpers (legacy PyCADebug)."""
import inspect
import os
import sys
import warnings

import PyCA.Core as core

__all__ = ['DebugHere', 'GetOuterFrame', 'CheckCUDAError']


def _interactive():
    try:
        return sys.stdin is not None and sys.stdin.isatty() and sys.stdout is not None \
            and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def DebugHere():
    """Stops in the debugger at the caller's line (IPython's debugger when
    available, else pdb). Without a terminal (batch jobs, tests, CI) or with
    PYTHONBREAKPOINT=0 it only warns and returns, so it never hangs."""
    if os.environ.get("PYTHONBREAKPOINT") == "0" or not _interactive():
        warnings.warn("DebugHere(): no interactive terminal, not stopping", RuntimeWarning,
                      stacklevel=2)
        return
    frame = sys._getframe(1)
    try:
        from IPython.core.debugger import Pdb
    except Exception:  # IPython missing or broken
        from pdb import Pdb
    Pdb().set_trace(frame)


def GetOuterFrame(level: int = 1) -> inspect.FrameInfo:
    """The inspect.FrameInfo (filename, lineno, function, ...) of the caller
    of the function that calls GetOuterFrame (level=1); level=0 is that
    function itself. Raises ValueError if the stack is not that deep.

    Args:
        level (int): how many frames above the caller of GetOuterFrame; default 1 (the caller's
            caller).

    Returns:
        inspect.FrameInfo: the frame record.

    Raises:
        ValueError: the stack is not ``level`` frames deep.
    """
    if not isinstance(level, int) or level < 0:
        raise ValueError("level must be an integer >= 0, got %r" % (level,))
    frame = sys._getframe(1)
    try:
        for _ in range(level):
            frame = frame.f_back
            if frame is None:
                raise ValueError("the call stack is less than %d frames deep" % (level + 1))
        return inspect.getouterframes(frame, 1)[0]
    finally:
        del frame


def CheckCUDAError(msg: str = '') -> None:
    """Waits for the GPU and raises RuntimeError if a CUDA call or kernel
    failed, naming the caller's file and line and ``msg``. A no-op in CPU
    builds and without a device.

    Args:
        msg (str): text added to the error message; default ''.

    Raises:
        RuntimeError: a CUDA call or kernel failed (the message names the caller's file and line).
    """
    fi = GetOuterFrame(1)
    core.CheckCUDAError(fi.filename, int(fi.lineno), str(msg))
