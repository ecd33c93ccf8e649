"""The benchmarks: each module is a script run from the repository root as
`python -m bench.<name>` (the paper's experiments as `python -m bench.paper.<name>`;
bench/README.md groups them and says what each answers), so that the project's packages
and the shared helpers (`bench.harness`, `bench.sst2`) import without any edit of
`sys.path`."""
