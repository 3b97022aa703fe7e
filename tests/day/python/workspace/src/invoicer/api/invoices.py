from fastapi import APIRouter, Depends, HTTPException, status
from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from invoicer.db import get_db
from invoicer.models import Invoice
from invoicer.schemas import InvoiceCreate, InvoiceOut
from invoicer.services.billing import create_invoice

router = APIRouter(prefix="/invoices", tags=["invoices"])


@router.get("", response_model=list[InvoiceOut])
def list_invoices(db: Session = Depends(get_db)) -> list[Invoice]:
    stmt = select(Invoice).options(selectinload(Invoice.lines)).order_by(Invoice.id)
    return list(db.scalars(stmt))


@router.get("/{invoice_id}", response_model=InvoiceOut)
def get_invoice(invoice_id: int, db: Session = Depends(get_db)) -> Invoice:
    invoice = db.get(Invoice, invoice_id)
    if invoice is None:
        raise HTTPException(status_code=status.HTTP_404_NOT_FOUND, detail="invoice not found")
    return invoice


@router.post("", response_model=InvoiceOut, status_code=status.HTTP_201_CREATED)
def post_invoice(payload: InvoiceCreate, db: Session = Depends(get_db)) -> Invoice:
    return create_invoice(db, payload)
