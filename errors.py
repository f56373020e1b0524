"""The one exception type whose message is shown to the user as it is.

Raise AskmdError where the cause is known, saying what happened and what to do; the
boundary in rag.main prints it as one line. Anything else is a bug and shows a traceback.
"""


class AskmdError(Exception):
    pass
