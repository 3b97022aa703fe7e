from functools import lru_cache

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", env_prefix="INVOICER_", extra="ignore")

    database_url: str = "sqlite:///./instance/dev.db"
    debug: bool = False
    default_currency: str = "EUR"
    page_size: int = Field(default=50, ge=1, le=500)
    secret_key: str = "change-me"
    cors_origins: list[str] = ["http://localhost:5173"]


@lru_cache
def get_settings() -> Settings:
    return Settings()
