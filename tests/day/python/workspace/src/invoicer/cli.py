import argparse

from invoicer import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="invoicer")
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("routes", help="print the API routes")
    args = parser.parse_args(argv)
    if args.cmd == "routes":
        from invoicer.main import app

        for route in app.routes:
            print(getattr(route, "path", route))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
