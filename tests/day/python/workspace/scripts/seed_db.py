"""Fill the dev database with fake customers and invoices."""
import argparse
import random
from datetime import date, timedelta
from decimal import Decimal

from invoicer.db import SessionLocal
from invoicer.models import Customer, InvoiceStatus
from invoicer.schemas import InvoiceCreate, LineItemIn
from invoicer.services.billing import create_invoice


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--customers", type=int, default=3)
    p.add_argument("--invoices", type=int, default=20)
    args = p.parse_args()
    rng = random.Random(42)
    with SessionLocal() as db:
        customers = [Customer(name=f"Customer {i}", email=f"c{i}@example.test") for i in range(args.customers)]
        db.add_all(customers)
        db.commit()
        for _ in range(args.invoices):
            payload = InvoiceCreate(
                customer_id=rng.choice(customers).id,
                issued_on=date.today() - timedelta(days=rng.randint(0, 90)),
                lines=[LineItemIn(description="Work", quantity=rng.randint(1, 5), unit_price=Decimal("99.50"))],
            )
            inv = create_invoice(db, payload)
            inv.status = rng.choice(list(InvoiceStatus))
        db.commit()
    print(f"seeded {args.customers} customers, {args.invoices} invoices")


if __name__ == "__main__":
    main()
