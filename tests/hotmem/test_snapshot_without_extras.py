"""A package with the semantic space, read by a HotMem without the ``semantic`` extra: a real
virtual environment holding HotMem and nothing else (as ``test_without_extras.py`` makes it).

It verifies, says why it could not recompute the space, refuses to hydrate the space (naming it,
the extra and the options), and hydrates without it when told to.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from tests.hotmem.test_without_extras import EXTRA, venv_without_extras

PROBE = textwrap.dedent(
    """
    import json, sys
    import hotmem

    package, target = sys.argv[1:3]
    found = {}
    report = hotmem.verify_snapshot(package, recompute_vectors=True)
    found["verify"] = [report.ok, [list(item) for item in report.not_recomputed]]
    try:
        hotmem.hydrate(package, target)
    except hotmem.HydrationError as error:
        found["refused"] = str(error)
    hydrated = hotmem.hydrate(package, target, drop_spaces=["all-minilm-l6-v2"])
    found["dropped"] = [list(item) for item in hydrated.spaces]
    with hotmem.open_store(target) as store:
        found["store"] = [[s.name for s in store.spaces], store.count()]
    print(json.dumps(found))
    """
)


@pytest.mark.slow
def test_a_semantic_package_without_the_extra(tmp_path: Path) -> None:
    python = venv_without_extras(tmp_path)
    import hotmem

    with hotmem.open_store(tmp_path / "source.db") as store:
        store.add("The Oslo office closes on Saturdays.", identifier="a", memory_id="m-oslo")
        store.add_space("all-minilm-l6-v2")
        digest = store.space("all-minilm-l6-v2").digest
        store.snapshot(tmp_path / "p.zip")
    completed = subprocess.run(
        [str(python), "-c", PROBE, str(tmp_path / "p.zip"), str(tmp_path / "t.db")],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"]},
    )
    assert json.loads(completed.stdout) == {
        "verify": [True, [["all-minilm-l6-v2", EXTRA]]],
        "refused": (
            f"the package's vector space 'all-minilm-l6-v2' (digest {digest[:12]}...) cannot be "
            f"used as it is: {EXTRA}; pass --reindex all-minilm-l6-v2 to rebuild it with this "
            "HotMem's embedder, or --drop-space all-minilm-l6-v2 to hydrate without it "
            "(hydrate(..., reindex=[...], drop_spaces=[...])); nothing was written"
        ),
        "dropped": [["all-minilm-l6-v2", "drop"]],
        "store": [["hotmem-hash-v1"], 1],
    }
