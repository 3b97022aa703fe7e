"""add invoice status

Revision ID: 3c4d5e6f7a8b
Revises: 7b8c9d0e1f2a
Create Date: 2024-04-02 09:15:37.772001
"""
from alembic import op
import sqlalchemy as sa

revision = "3c4d5e6f7a8b"
down_revision = "7b8c9d0e1f2a"
branch_labels = None
depends_on = None

status_enum = sa.Enum("draft", "sent", "paid", "void", name="invoicestatus")


def upgrade() -> None:
    with op.batch_alter_table("invoices") as batch:
        batch.add_column(sa.Column("status", status_enum, nullable=False, server_default="draft"))


def downgrade() -> None:
    with op.batch_alter_table("invoices") as batch:
        batch.drop_column("status")
