"""`ferrotok tokenize INPUT... -o DIR [--format megatron|bin|llmc|datatrove|numpy] ...`.

Files (text, JSONL, Parquet; `.gz`/`.zst`; globs, directories) to token shards plus
`DIR/manifest.json`, by `ferrotok.data.tokenize_files`. `register(subparsers)` adds the
subcommand to the `ferrotok` command's parser (see `ferrotok.cli`); `run(args)` runs it.
User errors (a bad record without --skip-bad, a missing file, another job's directory) print
one line on stderr and exit with status 2; Ctrl-C exits with 130 and leaves only complete
shards, after which the same command resumes.

Example::

    $ ferrotok tokenize 'data/*.jsonl.zst' -o shards/ --encoding cl100k_base --format megatron
    tokenize: 1,024.0 MB (100% of files), 512,000 docs, 250,000,000 tokens, ...
    shards/: 3 shards, 512,000 documents, 250,000,000 tokens (uint32), 0 records skipped
"""

from __future__ import annotations

import argparse
import sys

from ..progress import end_line


def register(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Adds the `tokenize` subcommand to `subparsers` and returns its parser."""
    p: argparse.ArgumentParser = subparsers.add_parser(
        "tokenize",
        help="tokenize files (text, JSONL, Parquet) into training shards",
        description=(
            "Tokenize a corpus of files into token shards for training (Megatron .bin/.idx, "
            "nanoGPT .bin, llm.c .bin, datatrove .ds, numpy .npy) plus DIR/manifest.json. "
            "Each document is followed by the encoding's <|endoftext|> unless --no-eot. "
            "Running the same command again resumes an interrupted job."
        ),
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT",
                   help="files, globs or directories (.txt, .jsonl, .parquet; .gz/.zst)")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory")
    p.add_argument("-e", "--encoding", default="cl100k_base",
                   help="encoding name, or the path of a saved encoding (default cl100k_base)")
    p.add_argument("--format", default="megatron",
                   choices=["megatron", "bin", "llmc", "datatrove", "numpy"],
                   help="shard layout (default megatron)")
    p.add_argument("--input-format", default=None, choices=["text", "jsonl", "parquet"],
                   help="read every input as this (default: from each file's name)")
    p.add_argument("--field", default="text",
                   help="JSONL field / Parquet column holding the text (default text)")
    p.add_argument("--text-mode", default="file", metavar="MODE",
                   help="plain text: one document per 'file' (default), per 'line', or "
                        "any other string: the separator between documents")
    p.add_argument("--bos", default=None, metavar="TOKEN",
                   help="token before each document (an id or a special token's text)")
    p.add_argument("--eot", default="default", metavar="TOKEN",
                   help="token after each document (default: the encoding's <|endoftext|>)")
    p.add_argument("--no-eot", action="store_true", help="nothing after each document")
    p.add_argument("--allowed-special", action="append", default=[], metavar="TOKEN",
                   help="encode this special token's text as the special token "
                        "(repeatable; 'all' for every one); by default it is plain text")
    p.add_argument("--shard-tokens", type=int, default=100_000_000, metavar="N",
                   help="tokens per shard at most (default 100,000,000)")
    p.add_argument("--prefix", default="shard", help="shard name prefix (default shard)")
    p.add_argument("--dtype", default=None, choices=["uint16", "uint32"],
                   help="id type (default uint16 when the vocabulary fits)")
    p.add_argument("--threads", type=int, default=None, help="encoding threads (default all)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip bad records (not JSON, missing field, not a string, not UTF-8) "
                        "and count them in the manifest, instead of stopping")
    p.add_argument("--overwrite", action="store_true",
                   help="replace another job's shards in DIR")
    p.add_argument("--no-progress", action="store_true", help="no progress on stderr")
    p.set_defaults(func=run)
    return p


def _token(value: str | None) -> int | str | None:
    if value is None:
        return None
    return int(value) if value.isdigit() else value


def run(args: argparse.Namespace) -> int:
    """Runs `ferrotok tokenize` with parsed arguments; returns the exit status."""
    from ..data.job import tokenize_files
    from ..data.readers import BadInput

    if args.threads is not None and args.threads < 1:
        return _fail(f"--threads must be a positive number, got {args.threads}")
    allowed: str | list[str] = args.allowed_special
    if "all" in allowed:
        allowed = "all"
    eot = None if args.no_eot else _token(args.eot)
    try:
        m = tokenize_files(
            args.inputs,
            args.output,
            encoding=args.encoding,
            format=args.format,
            input_format=args.input_format,
            field=args.field,
            text_mode=args.text_mode,
            bos=_token(args.bos),
            eot=eot,
            allowed_special=allowed,
            shard_tokens=args.shard_tokens,
            prefix=args.prefix,
            dtype=args.dtype,
            num_threads=args.threads,
            skip_bad=args.skip_bad,
            overwrite=args.overwrite,
            progress=not args.no_progress,
        )
    except KeyboardInterrupt:
        end_line()
        print("ferrotok tokenize: interrupted (complete shards kept; run the same command "
              "again to resume)", file=sys.stderr)
        return 130
    except (BadInput, OSError, ValueError, TypeError, KeyError, ImportError) as e:
        return _fail(str(e))
    skipped = m["skipped"]["total"]
    print(
        f"{args.output}: {len(m['shards'])} shards, {m['documents']:,} documents, "
        f"{m['tokens']:,} tokens ({m['job']['dtype']}), {skipped:,} records skipped"
    )
    return 0


def _fail(msg: str) -> int:
    end_line()  # the progress line, if one is open
    print(f"ferrotok tokenize: error: {msg}", file=sys.stderr)
    return 2
