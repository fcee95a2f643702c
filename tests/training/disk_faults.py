"""A file whose writes fail half-way with ENOSPC, for the tests of what a full disk leaves behind."""

import errno
import os


class DiskFullFile:
    """Wraps an open text file: `write` writes the first half of its text, flushes, and raises OSError(ENOSPC);
    everything else goes to the file. Usable as a context manager (closing the file on exit)."""

    def __init__(self, handle):
        self.handle = handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()

    def write(self, text):
        self.handle.write(text[: len(text) // 2])
        self.handle.flush()
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.handle, name)
