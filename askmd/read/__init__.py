"""Reading: a file in the knowledge folder becomes a Note (Markdown with headings, a line
map, and its vault syntax read once: links, embeds, tags, aliases)."""
