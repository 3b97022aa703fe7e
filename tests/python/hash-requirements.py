#!/usr/bin/env python3
"""Adds every file's sha256 to tests/python/requirements.txt, for `pip install --require-hashes`.

Each pinned `name==version` line gets the hashes of all of that release's files on the package
index (every platform's wheels and the source archive), read from the index's simple API (PEP 503),
which names each file's hash in its link. Run it after changing a pin:

    python3 tests/python/hash-requirements.py [INDEX_URL]

INDEX_URL defaults to $PIP_INDEX_URL, else https://pypi.org/simple.
"""

import os
import re
import sys
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

REQUIREMENTS = Path(__file__).with_name("requirements.txt")


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.extend(value for key, value in attrs if key == "href" and value)


def release_of(filename):
    """(normalized name, version) of a wheel or source archive's file name, or None."""
    if filename.endswith(".whl"):
        parts = filename[: -len(".whl")].split("-")
        return (normalize(parts[0]), parts[1]) if len(parts) >= 5 else None
    for suffix in (".tar.gz", ".zip"):
        if filename.endswith(suffix):
            name, _, version = filename[: -len(suffix)].rpartition("-")
            return (normalize(name), version) if name else None
    return None


def hashes(index, name, version):
    url = f"{index.rstrip('/')}/{normalize(name)}/"
    with urllib.request.urlopen(url, timeout=60) as response:
        page = response.read().decode("utf-8")
    links = Links()
    links.feed(page)
    found = set()
    for href in links.hrefs:
        path, _, fragment = href.partition("#")
        filename = path.rsplit("/", 1)[-1]
        if release_of(filename) == (normalize(name), version) and fragment.startswith("sha256="):
            found.add(fragment[len("sha256=") :])
    if not found:
        sys.exit(f"{url} lists no file of {name} {version} with a sha256")
    return sorted(found)


def main():
    index = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple")
    out = []
    for line in REQUIREMENTS.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("--hash=") or (out and out[-1].endswith("\\") and not stripped):
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s\\]+)(\s*\\)?", stripped)
        if not match:
            out.append(line)
            continue
        name, version = match.group(1), match.group(2)
        found = hashes(index, name, version)
        out.append(f"{name}=={version} \\")
        out.extend(
            f"    --hash=sha256:{digest}" + (" \\" if i + 1 < len(found) else "")
            for i, digest in enumerate(found)
        )
    REQUIREMENTS.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
