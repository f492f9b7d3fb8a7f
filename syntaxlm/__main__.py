"""``python -m syntaxlm`` runs the command line."""

from syntaxlm.cli import main

main()
