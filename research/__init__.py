"""The experiments: what the paper's tables give at CPU scale, what the one-hour recipe's
levers were measured to do, and probes that chose a default. Each module is a script run
from the repository root as `python -m research.<name>` (`research.paper.<name>` for the
paper's); research/README.md says what each answered and where its result is. Nothing in
the product imports from here."""
