"""One module per format askmd converts to Markdown (PDF, Word, HTML, plain text), and
what they share: the Converted result, the budget of characters and seconds a file is
read within, and escaping text that Markdown would read as structure."""
