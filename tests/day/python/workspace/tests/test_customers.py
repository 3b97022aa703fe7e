def test_create_customer(client):
    res = client.post("/customers", json={"name": "Globex", "email": "ap@globex.test"})
    assert res.status_code == 201
    assert res.json()["id"] > 0


def test_duplicate_email_conflicts(client, customer):
    res = client.post("/customers", json={"name": "Other", "email": customer.email})
    assert res.status_code == 409
