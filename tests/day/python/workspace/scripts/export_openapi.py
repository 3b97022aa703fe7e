"""Write the OpenAPI schema to a file (used for docs and the admin page types)."""
import argparse
import json
from pathlib import Path

from invoicer.main import create_app


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, default=Path("docs/openapi.json"))
    args = p.parse_args()
    args.out.write_text(json.dumps(create_app().openapi(), indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
