from datetime import date
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, EmailStr, Field

from invoicer.models import InvoiceStatus


class CustomerCreate(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    email: EmailStr


class CustomerOut(CustomerCreate):
    model_config = ConfigDict(from_attributes=True)

    id: int


class LineItemIn(BaseModel):
    description: str = Field(min_length=1, max_length=500)
    quantity: int = Field(default=1, ge=1)
    unit_price: Decimal = Field(ge=0, decimal_places=2)


class LineItemOut(LineItemIn):
    model_config = ConfigDict(from_attributes=True)

    id: int


class InvoiceCreate(BaseModel):
    customer_id: int
    currency: str = Field(default="EUR", pattern=r"^[A-Z]{3}$")
    issued_on: date | None = None
    terms_days: int = Field(default=30, ge=0, le=365)
    lines: list[LineItemIn] = Field(min_length=1)


class InvoiceOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    number: str
    customer_id: int
    status: InvoiceStatus
    currency: str
    issued_on: date
    due_on: date
    lines: list[LineItemOut]
