"""The real-data acceptance runs: the product on real data and real weights, beside a
reference (Hugging Face, the Keras model, the original's output), each held to the bar
acceptance/README.md states. Each module is a script run from the repository root as
`python -m acceptance.<name>` with `--shared_dir=../shared/data`. Nothing in the product
imports from here."""
