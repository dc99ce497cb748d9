"""Ranking tests never read the user's own trained model: the data folder is a temporary one."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("WARPWISE_DATA_DIR", str(tmp_path / "data"))
