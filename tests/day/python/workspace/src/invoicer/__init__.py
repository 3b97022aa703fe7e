"""invoicer: a small invoicing API."""

__version__ = "0.7.2"
