import logging

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from invoicer import __version__
from invoicer.api import customers, health, invoices
from invoicer.config import get_settings

logger = logging.getLogger(__name__)


def create_app() -> FastAPI:
    settings = get_settings()
    app = FastAPI(title="Invoicer", version=__version__, debug=settings.debug)
    app.add_middleware(
        CORSMiddleware,
        allow_origins=settings.cors_origins,
        allow_methods=["*"],
        allow_headers=["*"],
    )
    app.include_router(health.router)
    app.include_router(customers.router)
    app.include_router(invoices.router)
    logger.debug("app created (debug=%s)", settings.debug)
    return app


app = create_app()
