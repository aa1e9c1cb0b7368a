"""Exceptions raised by neoflow."""


class Error(RuntimeError):
    """An error reported by neoflow's Go core.

    The message is the core's error text: for a problem in an expression it
    names the line and column and shows the source line with a caret.
    """


class ForkError(Error):
    """The library was used in a process forked after it was loaded."""
