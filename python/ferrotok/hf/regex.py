"""Translating a ferrotok (fancy-regex) pre-tokenization pattern into one Oniguruma reads the same.

Invariant: `to_oniguruma(p)` splits every text into the same pieces under HuggingFace
`tokenizers`' Oniguruma as `p` does under ferrotok's fancy-regex, or raises `ValueError` naming
the construct it cannot carry over. The differences handled:

- possessive quantifiers: Oniguruma's Ruby syntax reads `X{1,3}+` as `(X{1,3})+` (a greedy
  repeat of the interval, so `\\p{N}{1,3}+` takes every digit), and takes `*+ ++ ?+` as
  possessive; every possessive becomes an atomic group, `(?>X{1,3})`, which both read alike;
- anchors: Oniguruma's `$` and `^` are end and start of *line*, fancy-regex's (without `m`)
  end and start of *text*: they become `\\z` and `\\A`;
- `\\w`: Oniguruma's is Letter|Mark|Decimal_Number|Connector_Punctuation, Rust's adds
  Alphabetic and Join_Control: it becomes the explicit Rust class;
- named groups `(?P<name>...)` become `(?<name>...)`;
- inline flags: `i` means the same in both; `s` (dot matches newline) is Oniguruma's
  `m`; Rust's `m` (multi-line anchors), `x`, `U`, `u` and `R` are refused.
"""

from __future__ import annotations

# Rust regex's `\w` (UTS#18 word characters), spelled with properties Oniguruma knows.
_WORD_CLASS_ITEMS = r"\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}"


def to_oniguruma(pattern: str) -> str:
    """`pattern` (fancy-regex syntax, as ferrotok runs it) rewritten for Oniguruma.

    >>> to_oniguruma(r"\\p{N}{1,3}+| ?\\p{L}++|\\s++$")
    '(?>\\\\p{N}{1,3})| ?(?>\\\\p{L}+)|(?>\\\\s+)\\\\z'
    """
    return _Translator(pattern).run()


class _Translator:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def fail(self, what: str) -> ValueError:
        return ValueError(
            f"cannot translate the pattern for HuggingFace tokenizers (Oniguruma): {what} "
            f"at position {self.i} of {self.p!r}"
        )

    def run(self) -> str:
        out = self.sequence(top=True)
        if self.i != len(self.p):
            raise self.fail("unbalanced ')'")
        return out

    def sequence(self, top: bool) -> str:
        """Alternatives up to the closing `)` (not consumed) or the end."""
        branches: list[str] = []
        atoms: list[str] = []
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if c == ")":
                if top:
                    raise self.fail("unbalanced ')'")
                break
            if c == "|":
                branches.append("".join(atoms))
                atoms = []
                self.i += 1
                continue
            if c in "*+?{" and self.quantifier_here():
                if not atoms:
                    raise self.fail("quantifier with nothing to repeat")
                atoms[-1] = self.quantify(atoms[-1])
                continue
            atoms.append(self.atom())
        branches.append("".join(atoms))
        return "|".join(branches)

    def quantifier_here(self) -> bool:
        c = self.p[self.i]
        if c != "{":
            return True
        j = self.p.find("}", self.i)
        if j < 0:
            return False
        body = self.p[self.i + 1 : j]
        lo, _, hi = body.partition(",")
        return lo.strip().isdigit() and (hi.strip() == "" or hi.strip().isdigit())

    def quantify(self, atom: str) -> str:
        p = self.p
        if p[self.i] == "{":
            j = p.index("}", self.i)
            q = p[self.i : j + 1].replace(" ", "")
            self.i = j + 1
        else:
            q = p[self.i]
            self.i += 1
        if self.i < len(p) and p[self.i] == "?":  # lazy: the same in both
            self.i += 1
            return atom + q + "?"
        if self.i < len(p) and p[self.i] == "+":  # possessive: an atomic group
            self.i += 1
            return "(?>" + atom + q + ")"
        return atom + q

    def atom(self) -> str:
        p = self.p
        c = p[self.i]
        if c == "\\":
            return self.escape(in_class=False)
        if c == "[":
            return self.char_class()
        if c == "(":
            return self.group()
        if c == "$":
            self.i += 1
            return r"\z"
        if c == "^":
            self.i += 1
            return r"\A"
        self.i += 1
        if c == "{" or c == "}":
            return "\\" + c
        return c

    def escape(self, in_class: bool) -> str:
        p = self.p
        if self.i + 1 >= len(p):
            raise self.fail("trailing backslash")
        c = p[self.i + 1]
        start = self.i
        self.i += 2
        if c in "pP":
            if self.i < len(p) and p[self.i] == "{":
                j = p.find("}", self.i)
                if j < 0:
                    raise self.fail("unterminated \\p{")
                self.i = j + 1
            else:
                self.i += 1
            return p[start : self.i]
        if c == "x":
            if self.i < len(p) and p[self.i] == "{":
                j = p.find("}", self.i)
                if j < 0:
                    raise self.fail("unterminated \\x{")
                self.i = j + 1
                return "\\x{" + p[start + 3 : j] + "}"
            self.i += 2
            return p[start : self.i]
        if c in "uU":
            raise self.fail(f"escape \\{c}")
        if c == "w":
            return _WORD_CLASS_ITEMS if in_class else "[" + _WORD_CLASS_ITEMS + "]"
        if c == "W":
            if in_class:
                raise self.fail("\\W inside a character class")
            return "[^" + _WORD_CLASS_ITEMS + "]"
        if c in "bB":
            if in_class:
                raise self.fail(f"\\{c} inside a character class")
            raise self.fail(f"word boundary \\{c}")
        if c.isdigit() and c != "0":
            raise self.fail("back-reference")
        if c in "zA":
            return "\\" + c
        if c == "Z":
            raise self.fail("\\Z")
        return p[start : self.i]

    def char_class(self) -> str:
        p = self.p
        out = ["["]
        self.i += 1
        if self.i < len(p) and p[self.i] == "^":
            out.append("^")
            self.i += 1
        if self.i < len(p) and p[self.i] == "]":  # a leading ']' is a literal
            out.append("\\]")
            self.i += 1
        while True:
            if self.i >= len(p):
                raise self.fail("unterminated character class")
            c = p[self.i]
            if c == "]":
                self.i += 1
                out.append("]")
                return "".join(out)
            if c == "\\":
                out.append(self.escape(in_class=True))
            elif c == "[":
                if p.startswith("[:", self.i):
                    raise self.fail("POSIX class")
                out.append(self.char_class())
            elif c in "-&~" and p.startswith(c * 2, self.i):
                if c != "&":
                    raise self.fail(f"class operator {c * 2}")
                out.append("&&")
                self.i += 2
            else:
                out.append(c)
                self.i += 1

    def group(self) -> str:
        p = self.p
        self.i += 1
        head = "("
        if p.startswith("?", self.i):
            if p.startswith("?P<", self.i):
                j = p.find(">", self.i)
                if j < 0:
                    raise self.fail("unterminated group name")
                head = "(?<" + p[self.i + 3 : j] + ">"
                self.i = j + 1
            elif p.startswith(("?:", "?=", "?!", "?<=", "?<!", "?>"), self.i):
                k = 3 if p.startswith(("?<=", "?<!"), self.i) else 2
                head = "(" + p[self.i : self.i + k]
                self.i += k
            elif p.startswith("?<", self.i):
                j = p.find(">", self.i)
                if j < 0:
                    raise self.fail("unterminated group name")
                head = "(" + p[self.i : j + 1]
                self.i = j + 1
            else:
                # Flags: (?flags) or (?flags:...)
                j = self.i + 1
                while j < len(p) and p[j] not in ":)":
                    j += 1
                if j >= len(p):
                    raise self.fail("unterminated flag group")
                flags = self.flags(p[self.i + 1 : j])
                if p[j] == ")":
                    # (?flags) applies to the rest of the enclosing group in both engines.
                    self.i = j + 1
                    return "(?" + flags + ")"
                head = "(?" + flags + ":"
                self.i = j + 1
        inner = self.sequence(top=False)
        if self.i >= len(p) or p[self.i] != ")":
            raise self.fail("unterminated group")
        self.i += 1
        return head + inner + ")"

    def flags(self, flags: str) -> str:
        out = []
        for f in flags:
            if f == "-":
                out.append(f)
            elif f == "i":
                out.append(f)
            elif f == "s":
                out.append("m")  # Oniguruma (Ruby syntax): m is dot-matches-newline
            else:
                raise self.fail(f"inline flag {f!r}")
        return "".join(out)
