"""The one exception type whose message is shown to the user as it is.

Raise AskmdError where the cause is known, saying what happened and what to do; the
boundary in cli.main prints it as one line, and the HTTP API sends it as {"error": ...}
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


class IndexReplaced(AskmdError):
    """Another process rebuilt this index folder for another knowledge folder."""

    status = 409


class IndexBusy(Busy):
    """Another process holds the index's lock file (`holder` is its pid, as written)."""

    def __init__(self, message: str, holder: str):
        super().__init__(message)
        self.holder = holder


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


OPENAI_URL = "https://api.openai.com/v1"


def openai_error(
    exc: BaseException, *, kind: str, url: str, model: str, timeout: float, retries: int
) -> AskmdError:
    """One line for a failure of an OpenAI-compatible server, from the `openai` client's
    exception: what happened and what to do. `kind` is "LLM" (the chat server: LLMFailed,
    which an answer survives by quoting the notes) or "embeddings". The failure is told
    apart here once; what each server's user can do about it differs, so the advice does."""
    import openai

    llm = kind == "LLM"
    make = LLMFailed if llm else AskmdError
    where = f"the {kind} server at {url}"
    tries = f" (tried {retries + 1} times)" if llm and retries else ""
    after = f" and still did after {retries} {'retry' if retries == 1 else 'retries'}"
    if isinstance(exc, openai.APITimeoutError):
        if llm:
            return make(
                f"{where} did not answer within {timeout:g} s{tries}. Is it overloaded "
                "or loading a model? Try again, or raise ASKMD_LLM_TIMEOUT."
            )
        return make(
            f"{where} did not answer within {timeout:g} s. "
            "Is it overloaded? Wait and run again, or lower ASKMD_EMBED_BATCH."
        )
    if isinstance(exc, openai.APIConnectionError):
        if llm and url == OPENAI_URL:  # the user set no URL: there is nothing of theirs to check
            return make(
                f"no network route to api.openai.com{tries}. Check the internet connection, "
                "or set OPENAI_BASE_URL to a local server."
            )
        reach = "reach" if llm else "connect to"
        return make(f"cannot {reach} {where}{tries}. Is it running? Check OPENAI_BASE_URL.")
    if not isinstance(exc, openai.APIStatusError):
        return make(f"{where} failed: {first_line(exc)}. Check the server's log.")
    status, detail = exc.status_code, server_message(exc.body)
    said = f": {detail}" if detail else ""
    if status == 401:
        return make(f"{where} refused the API key (401). Check OPENAI_API_KEY{' in .env' * llm}.")
    if status == 403 and llm:
        return make(
            f"{where} denied access (403){said}. Check that OPENAI_API_KEY may use "
            f"the model '{model}'."
        )
    if status == 404:
        if llm:
            return make(
                f"{where} does not know the model '{model}' (404){said}. "
                "Set ASKMD_LLM_MODEL to a model it serves."
            )
        return make(
            f"{where} does not know the model '{model}' (404). Check ASKMD_EMBEDDING_MODEL."
        )
    if status == 429:
        if llm:
            return make(
                f"{where} is rate-limiting requests or the quota is used up (429){tries}{said}. "
                "Wait a minute and ask again, or check your plan."
            )
        return make(
            f"{where} is rate-limiting requests (429){after}. "
            "Wait and run again, or lower ASKMD_EMBED_BATCH."
        )
    if llm and context_too_long(status, detail, exc.body):
        return make(
            f"the question and its sources do not fit the model's context ({status}{said}). "
            "Lower ASKMD_TOP_K or ASKMD_CHUNK_SIZE, or use a model with a longer context."
        )
    if status >= 500:
        if llm:
            return make(
                f"{where} failed ({status}){tries}{said}. "
                "Try again; if it persists, check the server's log."
            )
        return make(
            f"{where} failed ({status}){after}{said}. "
            "Check the server's log, or wait and run again."
        )
    if llm:
        return make(f"{where} rejected the request ({status}){said}.")
    return make(f"{where} failed ({status}){said}. Check the server's log.")


def context_too_long(status: int, detail: str, body: object) -> bool:
    """OpenAI says context_length_exceeded; llama.cpp, vLLM and Ollama say it in words."""
    code = body.get("code") if isinstance(body, dict) else None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code") or code
    text = detail.lower()
    return status in (400, 413, 422) and (
        code == "context_length_exceeded"
        or "context length" in text
        or "context size" in text
        or "context window" in text
        or "too many tokens" in text
        or "maximum context" in text
    )
