from fastapi import APIRouter, Depends
from sqlalchemy import text
from sqlalchemy.orm import Session

from invoicer import __version__
from invoicer.db import get_db

router = APIRouter(tags=["health"])


@router.get("/health")
def health(db: Session = Depends(get_db)) -> dict[str, str]:
    db.execute(text("SELECT 1"))
    return {"status": "ok", "version": __version__}
