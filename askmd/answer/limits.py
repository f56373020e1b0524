"""How long a question and a query may be: shared by every interface that takes a
question and by the follow-up rewrite, so all of them refuse or cut at the same length."""

# The longest question or query any interface accepts (the API refuses a longer one), and
# the longest query askmd itself makes of one: a follow-up read after the previous query,
# or a model's rewrite of it.
MAX_QUESTION_CHARS = 4000
MAX_QUERY_CHARS = 400
