from datetime import datetime, timedelta

from invoicer.models import Invoice, InvoiceStatus

REMINDER_INTERVAL = timedelta(days=7)


def reminder_due(invoice: Invoice, last_sent: datetime | None) -> bool:
    """Return True when a payment reminder should go out for ``invoice``."""
    if invoice.status != InvoiceStatus.sent:
        return False
    now = datetime.utcnow()
    if now.date() <= invoice.due_on:
        return False
    return last_sent is None or now - last_sent >= REMINDER_INTERVAL
