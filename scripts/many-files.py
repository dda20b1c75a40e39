#!/usr/bin/env python3
"""Writes COUNT files for a many-files ingest benchmark: copies of seed documents, each copy's bytes made
different (so Quarry's content hash sees COUNT distinct documents) in a way its format tolerates.

    scripts/many-files.py --count 20000 --out DIR SEED [SEED ...]

How a copy is varied, by extension:
  .md .txt .csv .tsv .html .htm .eml   a last line "copy N of NAME" (indexed as text, one short line)
  .pdf                                  a PDF comment after the end ("%copy N"), which readers skip
  .docx .xlsx .pptx .odt .ods .odp .epub .zip   the ZIP archive comment (central directory left intact)
Seeds of any other extension are refused (listed on stderr), as are seeds a ZIP reader cannot open.
Copies go to DIR/000/, DIR/001/, … a thousand to a folder, named NNNNN-<seed name>; seeds are used in
turn (copy N is of seed N mod len(seeds)). Prints one line: files written, bytes, seeds used.
"""
import argparse
import os
import shutil
import sys
import zipfile

TEXT = {".md", ".txt", ".csv", ".tsv", ".html", ".htm", ".eml"}
ZIPS = {".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub", ".zip"}


def vary(seed: str, target: str, n: int) -> None:
    ext = os.path.splitext(seed)[1].lower()
    if ext in TEXT:
        data = open(seed, "rb").read()
        tail = b"" if data.endswith(b"\n") else b"\n"
        open(target, "wb").write(data + tail + f"copy {n} of {os.path.basename(seed)}\n".encode())
    elif ext == ".pdf":
        data = open(seed, "rb").read()
        open(target, "wb").write(data + f"\n%copy {n}\n".encode())
    elif ext in ZIPS:
        shutil.copyfile(seed, target)
        with zipfile.ZipFile(target, "a") as archive:
            archive.comment = f"copy {n}".encode()
    else:
        raise ValueError(f"no way to vary {ext} files")


def usable(seed: str) -> bool:
    ext = os.path.splitext(seed)[1].lower()
    if ext in TEXT or ext == ".pdf":
        return True
    if ext in ZIPS:
        try:
            with zipfile.ZipFile(seed) as archive:
                archive.infolist()
            return True
        except (zipfile.BadZipFile, OSError, ValueError):
            return False
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("seeds", nargs="+")
    args = parser.parse_args()
    seeds = [s for s in args.seeds if usable(s)]
    for refused in sorted(set(args.seeds) - set(seeds)):
        print(f"not used (format cannot be varied safely): {refused}", file=sys.stderr)
    if not seeds:
        sys.exit("no usable seed")
    written = 0
    for n in range(args.count):
        seed = seeds[n % len(seeds)]
        folder = os.path.join(args.out, f"{n // 1000:03d}")
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, f"{n:05d}-{os.path.basename(seed)}")
        vary(seed, target, n)
        written += os.path.getsize(target)
    print(f"{args.count} files, {written / 2**20:.1f} MiB, from {len(seeds)} seeds")


if __name__ == "__main__":
    main()
