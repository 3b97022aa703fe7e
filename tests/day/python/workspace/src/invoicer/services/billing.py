from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy.orm import Session

from invoicer.models import Invoice, InvoiceStatus, LineItem
from invoicer.schemas import InvoiceCreate

CENT = Decimal("0.01")


def line_total(line: LineItem) -> Decimal:
    return (line.unit_price * line.quantity).quantize(CENT, rounding=ROUND_HALF_UP)


def invoice_total(invoice: Invoice) -> Decimal:
    return sum((line_total(line) for line in invoice.lines), Decimal("0.00"))


def is_overdue(invoice: Invoice, today: date | None = None) -> bool:
    today = today or date.today()
    return invoice.status == InvoiceStatus.sent and invoice.due_on <= today


def next_number(db: Session, year: int) -> str:
    count = db.query(Invoice).filter(Invoice.number.like(f"INV-{year}-%")).count()
    return f"INV-{year}-{count + 1:05d}"


def create_invoice(db: Session, payload: InvoiceCreate) -> Invoice:
    issued = payload.issued_on or date.today()
    invoice = Invoice(
        number=next_number(db, issued.year),
        customer_id=payload.customer_id,
        currency=payload.currency,
        issued_on=issued,
        due_on=issued + timedelta(days=payload.terms_days),
    )
    for item in payload.lines:
        invoice.lines.append(
            LineItem(description=item.description, quantity=item.quantity, unit_price=item.unit_price)
        )
    db.add(invoice)
    db.commit()
    db.refresh(invoice)
    return invoice
