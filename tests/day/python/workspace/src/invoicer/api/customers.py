from fastapi import APIRouter, Depends, HTTPException, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from invoicer.db import get_db
from invoicer.models import Customer, Invoice
from invoicer.schemas import CustomerCreate, CustomerOut, InvoiceOut

router = APIRouter(prefix="/customers", tags=["customers"])


@router.get("", response_model=list[CustomerOut])
def list_customers(db: Session = Depends(get_db)) -> list[Customer]:
    return list(db.scalars(select(Customer).order_by(Customer.name)))


@router.post("", response_model=CustomerOut, status_code=status.HTTP_201_CREATED)
def create_customer(payload: CustomerCreate, db: Session = Depends(get_db)) -> Customer:
    customer = Customer(name=payload.name, email=payload.email)
    db.add(customer)
    try:
        db.commit()
    except IntegrityError:
        db.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, "email already registered") from None
    db.refresh(customer)
    return customer


@router.get("/{customer_id}/invoices", response_model=list[InvoiceOut])
def customer_invoices(customer_id: int, db: Session = Depends(get_db)) -> list[Invoice]:
    stmt = select(Invoice).where(Invoice.customer_id == customer_id).order_by(Invoice.issued_on)
    return list(db.scalars(stmt))
