"""Finds the P4 toolchain p4vtep runs: p4c (BMv2 backend and p4test) and
simple_switch_grpc (BMv2 with PI/P4Runtime), and optionally the Tofino compiler.

The project never builds them: it takes what the user or upstream provides
(docs/toolchain.md). `python3 -m p4toolchain ensure` (run by `make toolchain`)
takes each tool from the first of these that has it, and asks a later one only
for what the earlier ones lack:

  1. on PATH, or named by P4C / SIMPLE_SWITCH_GRPC (P4C_TOFINO);
  2. a toolchain unpacked before into the project's prefix;
  3. an archive the user names (P4VTEP_TOOLCHAIN_ARCHIVE, path or URL, sha256 checked);
  4. upstream's published Debian packages (p4lang-p4c, p4lang-bmv2) on the distributions
     upstream publishes them for, from its signed apt repository;
  5. none: say which tool is missing and what its absence disables, list the ways
     and upstream's install pages (exit status 0: the callers decide whether that
     is fatal).

It reports each tool on its own: found (how, where, the version it reports) or
missing (and what that disables).

Standard library only: it runs before the project's virtualenv exists.
"""
