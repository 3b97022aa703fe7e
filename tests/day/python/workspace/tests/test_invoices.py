from decimal import Decimal


def make_payload(customer_id: int, **overrides):
    payload = {
        "customer_id": customer_id,
        "terms_days": 14,
        "lines": [{"description": "Consulting", "quantity": 2, "unit_price": "150.00"}],
    }
    payload.update(overrides)
    return payload


def test_create_invoice(client, customer):
    res = client.post("/invoices", json=make_payload(customer.id))
    assert res.status_code == 201
    body = res.json()
    assert body["number"].startswith("INV-")
    assert body["status"] == "draft"
    assert Decimal(body["lines"][0]["unit_price"]) == Decimal("150.00")


def test_list_invoices(client, customer):
    client.post("/invoices", json=make_payload(customer.id))
    client.post("/invoices", json=make_payload(customer.id, currency="USD"))
    res = client.get("/invoices")
    assert res.status_code == 200
    assert [inv["currency"] for inv in res.json()] == ["EUR", "USD"]


def test_get_missing_invoice_returns_404(client):
    res = client.get("/invoices/999")
    assert res.status_code == 404
