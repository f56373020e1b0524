"""The one exception a file that cannot be read raises, with the reason as its message:
its own module so that the format readers and notes can share it without importing each
other."""


class Unreadable(Exception):
    """A file that cannot become a Note; the message is the reason."""
