"""The speed benchmarks against peers: each module is a script run from the repository
root as `python -m bench.<name>` (bench/README.md says what each answers), so that the
project's packages and the shared helpers (`bench.harness`, `bench.sst2`, `bench.hf_peers`,
also used by `acceptance` and `research`) import without any edit of `sys.path`."""
