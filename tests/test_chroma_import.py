"""Chroma is imported without the `overrides` package's signature checks, which it runs on
every decorated method at import (a large share of every command's start), and the package
is left as it was for anyone else."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import ROOT

PROBE = textwrap.dedent(
    """
    import sys
    import overrides
    impl = sys.modules["overrides.overrides"]  # the attribute is the function of that name
    checked = []
    real_validate = impl._validate_method
    impl._validate_method = lambda *a: (checked.append(a), real_validate(*a))[1]
    real_override = overrides.override

    from askmd.index.chroma_import import imported
    chromadb = imported()
    client = chromadb.EphemeralClient()
    client.create_collection("probe").add(ids=["a"], embeddings=[[1.0, 0.0]])

    class Base(overrides.EnforceOverrides):
        def f(self, x): return x
    try:
        class Bad(Base):
            def f(self, x): return x
        enforced = False
    except TypeError:
        enforced = True
    print(len(checked), overrides.override is real_override, enforced)
    """
)


def test_chroma_is_imported_without_signature_checks_and_overrides_is_left_as_it_was():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out == ["0", "True", "True"]
