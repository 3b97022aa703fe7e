import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import sessionmaker

from invoicer.db import Base, get_db, make_engine
from invoicer.main import create_app
from invoicer.models import Customer


@pytest.fixture()
def db_session(tmp_path):
    engine = make_engine(f"sqlite:///{tmp_path}/test.db")
    Base.metadata.create_all(engine)
    TestingSession = sessionmaker(bind=engine, expire_on_commit=False)
    session = TestingSession()
    try:
        yield session
    finally:
        session.close()
        engine.dispose()


@pytest.fixture()
def client(db_session):
    app = create_app()
    app.dependency_overrides[get_db] = lambda: db_session
    with TestClient(app) as c:
        yield c


@pytest.fixture()
def customer(db_session):
    c = Customer(name="Acme GmbH", email="billing@acme.test")
    db_session.add(c)
    db_session.commit()
    return c
