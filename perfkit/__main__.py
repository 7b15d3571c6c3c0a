"""`python -m perfkit`: the `perfkit` command, where its console script is not on PATH."""

from perfkit.cli import main

main()
