from datetime import date, datetime, timedelta

from invoicer.models import Invoice, InvoiceStatus
from invoicer.services.reminders import reminder_due


def make_invoice(due_on: date, status: InvoiceStatus = InvoiceStatus.sent) -> Invoice:
    return Invoice(number="INV-2024-00001", customer_id=1, status=status, issued_on=due_on, due_on=due_on)


def test_no_reminder_before_due_date():
    inv = make_invoice(date.today() + timedelta(days=3))
    assert reminder_due(inv, None) is False


def test_first_reminder_after_due_date():
    inv = make_invoice(date.today() - timedelta(days=1))
    assert reminder_due(inv, None) is True


def test_reminder_respects_interval():
    inv = make_invoice(date.today() - timedelta(days=20))
    assert reminder_due(inv, datetime.utcnow() - timedelta(days=2)) is False
