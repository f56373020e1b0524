"""The one exception type whose message is shown to the user as it is.

Raise AskmdError where the cause is known, saying what happened and what to do; the
boundary in rag.main prints it as one line. Anything else is a bug and shows a traceback.
"""


class AskmdError(Exception):
    pass


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
