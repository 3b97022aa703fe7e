from datetime import date
from decimal import Decimal

from invoicer.models import Invoice, InvoiceStatus, LineItem
from invoicer.services.billing import invoice_total, is_overdue, line_total


def test_line_total_rounds_half_up():
    line = LineItem(description="x", quantity=3, unit_price=Decimal("0.335"))
    assert line_total(line) == Decimal("1.01")


def test_invoice_total_sums_lines():
    invoice = Invoice(
        lines=[
            LineItem(description="a", quantity=2, unit_price=Decimal("10.00")),
            LineItem(description="b", quantity=1, unit_price=Decimal("5.50")),
        ]
    )
    assert invoice_total(invoice) == Decimal("25.50")


def test_sent_invoice_past_due_is_overdue():
    invoice = Invoice(status=InvoiceStatus.sent, due_on=date(2024, 1, 31))
    assert is_overdue(invoice, today=date(2024, 2, 1))


def test_paid_invoice_is_never_overdue():
    invoice = Invoice(status=InvoiceStatus.paid, due_on=date(2024, 1, 31))
    assert not is_overdue(invoice, today=date(2024, 3, 1))
