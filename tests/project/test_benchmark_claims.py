"""The benchmark results shipped with the docs keep the ``claims`` convention.

Every ``claims`` entry is a target: name, a measured number, a target, a unit and which side is
better. Figures without a target (secondary rows) belong elsewhere in the JSON (for instance a
``reported`` or ``figures`` key), never in ``claims``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "docs" / "_static"
RESULTS = sorted(p for p in STATIC.rglob("*.json") if "claims" in json.loads(p.read_text()))


def test_the_distributed_benchmarks_ship_results():
    names = {p.name for p in RESULTS}
    assert {"safe_ef_quick.json", "qoda_quick.json", "qoda_time_quick.json",
            "dtzo_quick.json", "dtzo_cuts_quick.json"} <= names


@pytest.mark.parametrize("path", RESULTS, ids=[p.name for p in RESULTS])
def test_every_claim_is_a_measured_target(path):
    claims = json.loads(path.read_text())["claims"]
    assert isinstance(claims, list) and claims
    for c in claims:
        assert {"name", "measured", "target", "unit", "better"} <= set(c), c
        assert isinstance(c["name"], str) and c["name"], c
        assert c["better"] in ("higher", "lower"), c
        for key in ("measured", "target"):
            value = c[key]
            assert isinstance(value, int | float) and not isinstance(value, bool), (key, c)
