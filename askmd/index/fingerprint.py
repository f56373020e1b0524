"""What an index depends on (its fingerprint), and why a change of it means a rebuild."""

from __future__ import annotations

from askmd import terms
from askmd.index import embedding_models as models
from askmd.read import chunker
from askmd.settings import Settings


def embedder_id(settings: Settings) -> str:
    """The embedder's id without loading it, so a no-change sync stays instant."""
    return models.embedder_id(settings.embedding_backend, settings.embedding_model)


def companion_id(settings: Settings) -> str:
    """The id of the model that embeds CJK chunks beside the settings' one, or ""."""
    side = models.companion(embedder_id(settings))
    return side.id if side else ""


# What the manifest records per chunk; a change means every file is recorded again.
LAYOUT = 2  # 2: chunk texts and metadata kept, vectors filled after (keyword first)


def fingerprint(settings: Settings) -> str:
    """What the index depends on. `cjk=` (the CJK chunks' second model) is left out of
    the rebuild decision: a change of it redoes only those chunks (`change_side_model`)."""
    cjk = companion_id(settings)
    return (
        f"embedder={embedder_id(settings)};chunker={chunker.VERSION};terms={terms.VERSION};"
        f"layout={LAYOUT};"
        f"size={settings.chunk_size};overlap={settings.chunk_overlap}"
        + (f";cjk={cjk}" if cjk else "")
    )


def what_changed(old: str, new: str) -> str:
    """Why vectors built under the `old` fingerprint must be rebuilt, or "" if they need
    not (only the CJK chunks' second model differs: `change_side_model` handles that)."""
    before = dict(part.split("=", 1) for part in old.split(";") if "=" in part)
    after = dict(part.split("=", 1) for part in new.split(";") if "=" in part)
    before.pop("cjk", None)
    after.pop("cjk", None)
    if before == after:
        return ""
    if before.get("embedder") != after.get("embedder"):
        return f"embedder changed ({before.get('embedder')} → {after.get('embedder')})"
    if before.get("chunker") != after.get("chunker"):
        return "the chunker changed"
    if before.get("terms") != after.get("terms"):
        return "the keyword index changed (new search terms or fields)"
    if before.get("layout") != after.get("layout"):
        return "the index layout changed (chunk texts are now kept, for keyword-first indexing)"
    return (
        f"chunk settings changed (size {before.get('size')} → {after.get('size')}, "
        f"overlap {before.get('overlap')} → {after.get('overlap')})"
    )


def store_meta(embedder_id: str, settings: Settings) -> dict[str, str]:
    """What the vector store records of what made its vectors: opened with anything else,
    it is refused or rebuilt (store.py)."""
    return {"embedder": embedder_id, "fingerprint": fingerprint(settings)}
