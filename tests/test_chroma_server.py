"""Several askmd processes sharing one Chroma server: one collection per knowledge folder,
and a writer lease in the collection's metadata so that two machines never write one
collection at once. Against a real `chroma run` on 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import index_home
from settings import load_settings

from .conftest import NOTES, write_notes

CHROMA_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")


# --- the collection's name ------------------------------------------------------------


@pytest.mark.parametrize("name", ["notes", "my notes!", "笔记", ".hidden", "a" * 80, "x"])
def test_a_folder_names_a_valid_collection_unique_to_its_real_path(tmp_path, name) -> None:
    folder = tmp_path / name
    folder.mkdir()
    collection = index_home.default_collection(folder)
    assert CHROMA_NAME.match(collection), collection
    assert index_home.default_collection(tmp_path / "other" / name) != collection
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert index_home.default_collection(link) == collection  # the real path counts


def test_a_server_gets_one_collection_per_folder_unless_one_is_named(tmp_path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    url = {"ASKMD_CHROMA_URL": "http://127.0.0.1:8001"}

    def collection(folder: Path, **env: str) -> str:
        environ = {"ASKMD_KNOWLEDGE_DIR": str(folder), **env}
        return load_settings(environ, dotenv_path=None).collection

    assert collection(a) == collection(b) == "askmd"  # embedded: each index has its own
    assert collection(a, **url) == index_home.default_collection(a)
    assert collection(b, **url) == index_home.default_collection(b)
    assert collection(a, **url, ASKMD_COLLECTION="team") == "team"
    assert collection(a, **url, ASKMD_COLLECTION="") == index_home.default_collection(a)
