"""CLI subcommands: each module defines `register(subparsers)` and sets `func` on its parser.

Discovered by `metalport.cli`; a module's heavy imports happen inside its `run` function.
"""
