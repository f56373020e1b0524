"""The one exception type whose message is shown to the user as it is.

Raise AskmdError where the cause is known, saying what happened and what to do; the
boundary in rag.main prints it as one line, and the HTTP API sends it as {"error": ...}
with `status`. Anything else is a bug and shows a traceback (never over HTTP).
"""


class AskmdError(Exception):
    status = 500  # the HTTP status when the API reports it


class BadRequest(AskmdError):
    status = 400


class Forbidden(AskmdError):
    """A path outside the knowledge folder, or a name askmd will not write."""

    status = 403


class NotFound(AskmdError):
    status = 404


class Busy(AskmdError):
    """Another process is writing the index."""

    status = 409


class BadNote(AskmdError):
    """A note that cannot be indexed (binary, not UTF-8, too large): the client's content."""

    status = 422


class Damaged(AskmdError):
    """The local Chroma collection cannot be read back (a run killed while Chroma was
    saving it): the next sync moves it aside and rebuilds it from the notes."""

    def __init__(self, message: str, cause: str = ""):
        super().__init__(message)
        self.cause = cause  # Chroma's own words, for the sync's one-line report


class DiskFull(AskmdError):
    """No space left where the index is written; rebuilding would not help."""

    status = 507


class LLMFailed(AskmdError):
    """The LLM server failed or could not be reached: the gateway's fault, not the client's."""

    status = 502


def first_line(error: BaseException) -> str:
    """An exception's message cut to its first line, or its type when it has none."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def disk_full(error: BaseException) -> bool:
    """Whether an error, or any error in its cause/context chain, is a full disk: ENOSPC
    from the OS, or SQLite's and Chroma's own words for it."""
    import errno

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if getattr(current, "errno", None) == errno.ENOSPC:
            return True
        text = str(current).lower()
        if "no space left on device" in text or "database or disk is full" in text:
            return True
        current = current.__cause__ or current.__context__
    return False


def server_message(body: object) -> str:
    """The error text an OpenAI-style server put in its reply, on one short line."""
    if isinstance(body, dict):
        body = body.get("error", body)
    if isinstance(body, dict):
        body = body.get("message") or body.get("detail")
    text = " ".join(str(body).split()) if body else ""
    return text if len(text) <= 200 else text[:199] + "…"
