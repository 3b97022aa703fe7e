import pytest
from alembic import command
from alembic.config import Config


@pytest.mark.slow
def test_upgrade_downgrade_roundtrip(tmp_path, monkeypatch):
    monkeypatch.setenv("INVOICER_DATABASE_URL", f"sqlite:///{tmp_path}/m.db")
    cfg = Config("alembic.ini")
    command.upgrade(cfg, "head")
    command.downgrade(cfg, "base")
