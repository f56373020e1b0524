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


class LLMFailed(AskmdError):
    """The LLM server failed or could not be reached: the gateway's fault, not the client's."""

    status = 502


def first_line(error: BaseException) -> str:
    """An exception's message cut to its first line, or its type when it has none."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def server_message(body: object) -> str:
    """The error text an OpenAI-style server put in its reply, on one short line."""
    if isinstance(body, dict):
        body = body.get("error", body)
    if isinstance(body, dict):
        body = body.get("message") or body.get("detail")
    text = " ".join(str(body).split()) if body else ""
    return text if len(text) <= 200 else text[:199] + "…"
